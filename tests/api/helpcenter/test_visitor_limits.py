"""Views are limited per client address (issue 26): a signed cookie is a visitor of its own
from the day after it was made, so cookies gathered one day could each count a view the next.
An address adds at most ``VIEWS_PER_ADDRESS_DAY`` counted views to an org's day: the pages past
it are served, their views are not counted. No Redis key name or field holds the raw address."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter import visitors
from api.helpcenter.feedback import flush_views
from api.helpcenter.visitors import VISITOR_COOKIE, new_visitor_token, question_views_daily
from tasks.help_center import aggregate_views
from tenancy.db import tenant_session
from tenancy.redis import loop_client
from tests.api.helpcenter.helpers import enable, new_address, question
from tests.fixtures.orgs import OrgClient

LIMIT = 5


def today() -> date:
    return datetime.now(UTC).date()


async def views(engine: AsyncEngine, org: OrgClient) -> dict[str, int]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(select(question_views_daily))
        return {r.question_id: r.views for r in rows}


async def view_as_returning_reader(app: Quart, url: str, address: str) -> None:
    """A reader with a signed cookie of an earlier day (a visitor of its own), at ``address``."""
    cookie = new_visitor_token(today() - timedelta(days=1))
    r = await app.test_client(use_cookies=False).get(
        url,
        headers={"Cookie": f"{VISITOR_COOKIE}={cookie}"},
        scope_base={"client": (address, 40000)},
    )
    assert r.status_code == 200  # served, counted or not
    assert "Was this helpful?" in await r.get_data(as_text=True)


def as_bytes(names: Iterable[bytes | str]) -> list[bytes]:
    return [n if isinstance(n, bytes) else n.encode() for n in names]


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "Where is my parcel?", "On its way.")


async def test_an_address_counts_at_most_its_daily_views_and_pages_are_still_served(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    published: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(visitors, "VIEWS_PER_ADDRESS_DAY", LIMIT)
    other = await question(org, "Can I change the address?", "Yes.")
    flooder = new_address()
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    for _ in range(3 * LIMIT):
        await view_as_returning_reader(app, url, flooder)
    await flush_views(app)  # over two flushes: the count is kept in Redis, not per flush
    await view_as_returning_reader(app, f"/hc/{org.slug}/en/questions/{other['slug']}", flooder)
    await flush_views(app)
    for _ in range(2):  # readers at other addresses still count
        await view_as_returning_reader(app, url, new_address())
    await flush_views(app)
    await aggregate_views(engine)
    assert await views(engine, org) == {published["id"]: LIMIT + 2}


async def test_the_limit_is_per_org(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    other_org: OrgClient,
    published: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(visitors, "VIEWS_PER_ADDRESS_DAY", LIMIT)
    await enable(other_org)
    theirs = await question(other_org, "Where is my parcel?", "Elsewhere.")
    address = new_address()
    for _ in range(LIMIT + 2):
        await view_as_returning_reader(
            app, f"/hc/{org.slug}/en/questions/{published['slug']}", address
        )
    for _ in range(2):
        await view_as_returning_reader(
            app, f"/hc/{other_org.slug}/en/questions/{theirs['slug']}", address
        )
    await flush_views(app)
    await aggregate_views(engine)
    assert await views(engine, org) == {published["id"]: LIMIT}
    assert await views(engine, other_org) == {theirs["id"]: 2}


async def test_no_redis_key_or_field_of_views_or_votes_holds_the_address(
    app: Quart, org: OrgClient, published: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(visitors, "VIEWS_PER_ADDRESS_DAY", LIMIT)
    address = "203.0.113.201"
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    for _ in range(LIMIT + 1):
        await view_as_returning_reader(app, url, address)
    await flush_views(app)
    redis = loop_client()
    keys = [k async for k in redis.scan_iter(match="faq:*")]
    assert any(k.startswith(b"faq:hc:views:") for k in keys)
    for key in keys:
        assert address.encode() not in key
        kind = await redis.type(key)
        if kind == b"hash":
            fields = as_bytes(await redis.hgetall(key))  # type: ignore[misc]
            assert fields and not any(address.encode() in f for f in fields), key
        elif kind == b"set":
            members = as_bytes(await redis.smembers(key))  # type: ignore[misc]
            assert not any(address.encode() in m for m in members), key
    per_address = [k for k in keys if org.info.id.encode() in k and await redis.type(k) == b"hash"]
    assert per_address, "no per-address count of views"
    for key in per_address:
        assert 0 < await redis.ttl(key) <= visitors.VIEW_SET_TTL_SECONDS
