"""Failed authentication is cheap and bounded: an unknown key costs PostgreSQL one lookup (a
bounded negative cache), and an address that keeps failing gets 429 ``rate_limited`` instead of
401, while valid keys from the same address keep working."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import shared_session
from tenancy.keys import create_key
from tenancy.settings import Settings
from tests.fixtures.directory import settled
from tests.fixtures.orgs import OrgClient
from tests.fixtures.services import Services


def an_address() -> str:
    return f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}"


def bad_token() -> str:
    return "faq_" + secrets.token_urlsafe(32)


async def get_as(
    org: OrgClient, token: str, address: str, headers: dict[str, str] | None = None
) -> Any:
    return await org.client.get(
        f"/api/v1/{org.slug}/categories",
        headers={"Authorization": f"Bearer {token}", **(headers or {})},
        scope_base={"client": (address, 40000)},
    )


def failure_limit(app: Quart) -> int:
    settings: Settings = app.extensions["settings"]
    return settings.faq_auth_failures_per_minute


async def in_one_window(needed_seconds: float = 15) -> None:
    """The failure counter is a fixed one-minute window: start where the test fits in one."""
    left = 60 - time.time() % 60
    if left < needed_seconds:
        await asyncio.sleep(left + 0.05)


@pytest.fixture
def key_lookups(engine: AsyncEngine) -> Iterator[list[str]]:
    """Every statement this process sends PostgreSQL about API keys (observed, not mocked)."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "api_keys" in statement and statement.lstrip().upper().startswith("SELECT"):
            seen.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


async def test_an_unknown_key_costs_postgresql_one_lookup(
    app: Quart, org: OrgClient, engine: AsyncEngine, key_lookups: list[str]
) -> None:
    await settled(app, engine)
    token, address = bad_token(), an_address()
    for _ in range(5):
        r = await get_as(org, token, address)
        assert r.status_code == 401
        assert (await r.get_json())["error"]["code"] == "unauthorized"
    assert len(key_lookups) == 1


async def test_a_key_created_after_a_cached_miss_works_at_once(
    app: Quart, org: OrgClient, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its raw value was presented (and missed) before it existed: once its creation is
    committed and announced, it works (no waiting for the miss to expire)."""
    raw = secrets.token_urlsafe(32)
    address = an_address()
    assert (await get_as(org, "faq_" + raw, address)).status_code == 401
    assert (await get_as(org, "faq_" + raw, address)).status_code == 401  # a cached miss
    directory = app.extensions["tenancy"].directory
    seen = directory.invalidations
    # The test seam: the generated key is the one presented above.
    monkeypatch.setattr(secrets, "token_urlsafe", lambda _n: raw)
    async with shared_session(engine) as session, session.begin():
        issued = await create_key(session, org.info.id, ["read"])
    assert issued.key == "faq_" + raw
    deadline = time.monotonic() + 5
    while directory.invalidations == seen:  # the creation's NOTIFY reached this process
        assert time.monotonic() < deadline, "the key creation was not announced"
        await asyncio.sleep(0.01)
    assert (await get_as(org, issued.key, address)).status_code == 200


async def test_failed_authentications_are_limited_per_address(app: Quart, org: OrgClient) -> None:
    limit = failure_limit(app)
    flooding, bystander = an_address(), an_address()
    await in_one_window()
    for _ in range(limit):
        assert (await get_as(org, bad_token(), flooding)).status_code == 401
    r = await get_as(org, bad_token(), flooding)
    assert r.status_code == 429
    body = await r.get_json()
    assert body["error"]["code"] == "rate_limited"
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert body["error"]["details"] == []
    assert 1 <= int(r.headers["Retry-After"]) <= 61
    # A revoked or unknown key keeps getting 429 from there; a valid key from the same
    # address (a legitimate client behind the same NAT) still works.
    assert (await get_as(org, bad_token(), flooding)).status_code == 429
    assert (await get_as(org, org.keys["read"], flooding)).status_code == 200
    # Other addresses are not affected.
    assert (await get_as(org, bad_token(), bystander)).status_code == 401


async def test_forwarded_for_is_ignored_unless_the_proxy_is_trusted(
    app: Quart, org: OrgClient
) -> None:
    """By default ``X-Forwarded-For`` is the client's word: a flood cannot dodge the limit by
    changing it."""
    limit = failure_limit(app)
    address = an_address()
    await in_one_window()
    for _ in range(limit):
        r = await get_as(org, bad_token(), address, {"X-Forwarded-For": an_address()})
        assert r.status_code == 401
    r = await get_as(org, bad_token(), address, {"X-Forwarded-For": an_address()})
    assert r.status_code == 429


async def test_a_trusted_proxy_forwards_the_client_address(engine: AsyncEngine) -> None:
    """``FAQ_TRUST_FORWARDED_FOR``: the last ``X-Forwarded-For`` entry (the one the trusted
    proxy appended) is the client, so clients behind the proxy are counted apart."""
    from api.app import create_app
    from tenancy.settings import get_settings
    from tests.fixtures.orgs import make_org

    app = create_app(get_settings().model_copy(update={"faq_trust_forwarded_for": True}))
    async with app.test_app():
        org = await make_org(engine, app.test_client())
        limit = failure_limit(app)
        proxy, flooding, other = an_address(), an_address(), an_address()
        await in_one_window()
        for _ in range(limit):
            r = await get_as(org, bad_token(), proxy, {"X-Forwarded-For": f"1.2.3.4, {flooding}"})
            assert r.status_code == 401
        r = await get_as(org, bad_token(), proxy, {"X-Forwarded-For": f"5.6.7.8, {flooding}"})
        assert r.status_code == 429
        r = await get_as(org, bad_token(), proxy, {"X-Forwarded-For": other})
        assert r.status_code == 401


async def test_failed_authentications_fail_open_while_redis_is_down(
    app: Quart, org: OrgClient, services: Services
) -> None:
    limit = failure_limit(app)
    address = an_address()
    await asyncio.to_thread(services.redis.stop)
    try:
        for _ in range(limit + 2):
            assert (await get_as(org, bad_token(), address)).status_code == 401
    finally:
        await asyncio.to_thread(services.redis.start)
