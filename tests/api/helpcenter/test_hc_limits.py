"""Rate limits of the anonymous help center (issue 26): per address and per org, searches
tighter than pages, a 429 HTML page with ``Retry-After``; and unknown org slugs cached as
misses, so a flood of invented slugs costs PostgreSQL a bounded number of queries."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from api.orgs import create_org
from billing.plans import Plan
from tenancy.db import shared_session
from tenancy.directory import ORG_MISS_TTL
from tenancy.keys import create_key
from tenancy.settings import get_settings
from tests.api.helpcenter.helpers import enable
from tests.fixtures.directory import listening
from tests.fixtures.orgs import OrgClient, make_org, unique_slug

pytestmark = pytest.mark.slow

# Budgets of 2, 1, 4 and 2 requests a minute with bursts of 300 s worth: 10 pages and 5
# searches per address, 20 pages and 10 searches per org at once, then one every 15-60 s (no
# test runs that long).
LIMITS = {
    "faq_hc_pages_per_address_per_minute": 2,
    "faq_hc_searches_per_address_per_minute": 1,
    "faq_hc_pages_per_org_per_minute": 4,
    "faq_hc_searches_per_org_per_minute": 2,
    "faq_hc_burst_seconds": 300,
}


@asynccontextmanager
async def limited_app(**overrides: Any) -> AsyncIterator[Quart]:
    from api.app import create_app

    app = create_app(get_settings().model_copy(update={**LIMITS, **overrides}))
    async with app.test_app():
        yield app


@pytest.fixture
async def app_with_limits() -> AsyncIterator[Quart]:
    async with limited_app() as app:
        yield app


_addresses = itertools.count()


def an_address() -> str:
    """A client address no other request of the session used (buckets outlive a test)."""
    n = next(_addresses)
    return f"198.18.{n // 250}.{n % 250 + 1}"


async def get(app: Quart, path: str, address: str) -> Any:
    return await app.test_client().get(path, scope_base={"client": (address, 40000)})


async def enabled_org(app: Quart, engine: AsyncEngine) -> OrgClient:
    org = await make_org(engine, app.test_client())
    await enable(org)
    return org


def assert_refused(r: Any, body: str) -> None:
    assert r.status_code == 429
    assert r.headers["Content-Type"].startswith("text/html")
    assert 1 <= int(r.headers["Retry-After"]) <= 60  # when that budget admits again
    assert "no-store" in r.headers["Cache-Control"]
    assert "default-src 'none'" in r.headers["Content-Security-Policy"]
    assert "<title>Too many requests</title>" in body
    assert r.headers["X-Request-Id"]


async def test_a_flood_from_one_address_gets_429_while_another_address_is_served(
    app_with_limits: Quart, engine: AsyncEngine
) -> None:
    app = app_with_limits
    org = await enabled_org(app, engine)
    flooding, other = an_address(), an_address()
    for n in range(10):
        assert (await get(app, f"/hc/{org.slug}/en", flooding)).status_code == 200, n
    r = await get(app, f"/hc/{org.slug}/en", flooding)
    assert_refused(r, await r.get_data(as_text=True))
    # Every page of the help center counts, the org's other pages as well.
    assert (await get(app, f"/hc/{org.slug}/theme.css", flooding)).status_code == 429
    assert (await get(app, f"/hc/{org.slug}/en", other)).status_code == 200


async def test_searches_are_limited_tighter_than_pages(
    app_with_limits: Quart, engine: AsyncEngine
) -> None:
    app = app_with_limits
    org = await enabled_org(app, engine)
    reader = an_address()
    for n in range(5):
        r = await get(app, f"/hc/{org.slug}/en/search?q=word{n}", reader)
        assert r.status_code == 200, n
    r = await get(app, f"/hc/{org.slug}/en/search?q=another", reader)
    assert_refused(r, await r.get_data(as_text=True))
    # The same address still reads pages (6 of its 10 used).
    assert (await get(app, f"/hc/{org.slug}/en", reader)).status_code == 200


async def test_distinct_addresses_against_one_org_hit_its_limit_and_other_orgs_are_served(
    app_with_limits: Quart, engine: AsyncEngine
) -> None:
    app = app_with_limits
    flooded, other = await enabled_org(app, engine), await enabled_org(app, engine)
    statuses = [
        (await get(app, f"/hc/{flooded.slug}/en", an_address())).status_code for _ in range(25)
    ]
    assert statuses[:20] == [200] * 20
    assert set(statuses[20:]) == {429}
    r = await get(app, f"/hc/{flooded.slug}/en", an_address())
    assert_refused(r, await r.get_data(as_text=True))
    assert (await get(app, f"/hc/{other.slug}/en", an_address())).status_code == 200
    # Searches per org: 10, each from a fresh address.
    searched = await enabled_org(app, engine)
    statuses = [
        (await get(app, f"/hc/{searched.slug}/en/search?q=q{n}", an_address())).status_code
        for n in range(12)
    ]
    assert statuses == [200] * 10 + [429] * 2
    assert (await get(app, f"/hc/{searched.slug}/en", an_address())).status_code == 200


async def test_a_refused_address_does_not_use_up_its_org_budget(
    app_with_limits: Quart, engine: AsyncEngine
) -> None:
    """Only requests within their address's budget count against the org's: one address
    cannot turn a help center off for everyone."""
    app = app_with_limits
    org = await enabled_org(app, engine)
    flooding = an_address()
    statuses = [(await get(app, f"/hc/{org.slug}/en", flooding)).status_code for _ in range(40)]
    assert statuses.count(200) == 10  # 30 refused: over the org's 20 had they counted
    for _ in range(5):
        assert (await get(app, f"/hc/{org.slug}/en", an_address())).status_code == 200


async def test_a_peer_that_is_not_an_ip_address_is_limited_per_org_only(
    app_with_limits: Quart, engine: AsyncEngine
) -> None:
    """A Unix-socket peer (here the test client's ``<local>``) names no client: its requests
    are not pooled into one address's budget, the org's budget still holds."""
    app = app_with_limits
    org = await enabled_org(app, engine)
    client = app.test_client()
    statuses = [(await client.get(f"/hc/{org.slug}/en")).status_code for _ in range(22)]
    assert statuses == [200] * 20 + [429] * 2


# ---- unknown org slugs ---------------------------------------------------------------------


@pytest.fixture
def org_lookups() -> Iterator[Callable[[AsyncEngine], list[str]]]:
    """``watch(engine)``: every statement that engine sends PostgreSQL looking an org up by
    slug (observed, not mocked)."""
    watched: list[tuple[AsyncEngine, Any]] = []

    def watch(engine: AsyncEngine) -> list[str]:
        seen: list[str] = []

        def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if "organizations.slug =" in statement:
                seen.append(statement)

        event.listen(engine.sync_engine, "before_cursor_execute", record)
        watched.append((engine, record))
        return seen

    yield watch
    for engine, record in watched:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


async def test_a_thousand_requests_for_unknown_slugs_cost_one_query_per_slug(
    app: Quart, engine: AsyncEngine, org_lookups: Callable[[AsyncEngine], list[str]]
) -> None:
    """Each slug costs one query per ``ORG_MISS_TTL`` at most, however often it is asked."""
    await listening(app)
    seen = org_lookups(engine)
    slugs = [unique_slug("nobody") for _ in range(10)]
    started = time.monotonic()
    for n in range(1_000):
        r = await get(app, f"/hc/{slugs[n % 10]}/en/search?q=x{n}", an_address())
        assert r.status_code == 404
    windows = int((time.monotonic() - started) // ORG_MISS_TTL) + 1
    assert len(seen) <= 10 * windows < 1_000 / 10


async def test_a_thousand_distinct_unknown_slugs_from_one_address_cost_its_page_budget(
    org_lookups: Callable[[AsyncEngine], list[str]],
) -> None:
    """Each invented slug is a new miss; the address's page budget bounds how many reach the
    directory. Slugs no org can have (not a valid slug) never reach PostgreSQL."""
    async with limited_app(faq_hc_pages_per_address_per_minute=10) as app:  # 50 at once
        await listening(app)
        seen = org_lookups(app.extensions["tenancy"].engine)
        flooding = an_address()
        statuses = [
            (await get(app, f"/hc/{unique_slug('x')}-{n}/en", flooding)).status_code
            for n in range(1_000)
        ]
        assert statuses[:50] == [404] * 50
        assert statuses.count(404) + statuses.count(429) == 1_000
        assert statuses.count(404) <= 60  # one more every 6 s: the run is far shorter
        assert len(seen) <= statuses.count(404)
        seen.clear()
        for bad in ("UPPER", "a" * 64, "-dash", "dot.ted", "under_score"):
            assert (await get(app, f"/hc/{bad}/en", an_address())).status_code == 404
        assert seen == []


async def test_a_cached_miss_is_dropped_when_the_org_arrives(
    app: Quart, engine: AsyncEngine, org_lookups: Callable[[AsyncEngine], list[str]]
) -> None:
    """A slug looked up before its org existed: cached as a miss (one query for many
    lookups), and served as soon as the org's first key (or settings change) is announced,
    without waiting for the miss to expire. An org cannot be reached before either."""
    await listening(app)
    seen = org_lookups(engine)
    slug = unique_slug("late")
    client = app.test_client()
    for _ in range(20):
        assert (await client.get(f"/hc/{slug}/en")).status_code == 404
    assert len(seen) == 1
    directory = app.extensions["tenancy"].directory
    info = await create_org(engine, slug, None, Plan.STARTER)
    before = directory.invalidations
    async with shared_session(engine) as session, session.begin():
        issued = await create_key(session, info.id, ["admin"])
    deadline = time.monotonic() + 5
    while directory.invalidations == before:  # the key's creation reached this process
        assert time.monotonic() < deadline, "the key creation was not announced"
        await asyncio.sleep(0.01)
    org = OrgClient(client, info, {"admin": issued.key})
    assert (await org.get("/categories")).status_code == 200
    await enable(org)
    assert (await client.get(f"/hc/{slug}/en")).status_code == 200
