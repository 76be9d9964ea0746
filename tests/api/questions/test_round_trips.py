"""Round trips to PostgreSQL per request (issue 14): an uncached read of a question or of a
page of questions is one round trip once the process is warm, and reads through that path
still see only their own org's rows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import Engine, event

from tests.api.questions.helpers import create, default_category
from tests.fixtures.orgs import OrgClient


class RoundTrips:
    """Every message exchange any engine's connections have with the server: the statements
    SQLAlchemy sends (prepared, one round trip each once prepared) and the simple queries
    asyncpg sends itself (BEGIN, COMMIT, ROLLBACK: its query logger)."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.told: list[str] = []
        self.logged: set[Any] = set()

    def on_cursor(self, _c: Any, cur: Any, statement: str, _p: Any, _x: Any, _m: bool) -> None:
        self.sent.append(statement)
        if cur is None:  # not through SQLAlchemy's cursor: asyncpg logs it as well
            self.told.append(statement)

    def on_query(self, record: Any) -> None:
        # A string the cursor hook was told about too (``tenancy.db`` sends BEGIN with the
        # binding to the driver directly and tells the hook) is the same round trip; asyncpg
        # calls its loggers soon after, not at once.
        if record.query in self.told:
            self.told.remove(record.query)
        else:
            self.sent.append(record.query)

    def on_checkout(self, dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        driver = dbapi_conn.driver_connection
        driver.add_query_logger(self.on_query)
        self.logged.add(driver)


@pytest.fixture
def round_trips() -> Iterator[RoundTrips]:
    trips = RoundTrips()
    event.listen(Engine, "before_cursor_execute", trips.on_cursor)
    event.listen(Engine, "checkout", trips.on_checkout)
    yield trips
    event.remove(Engine, "before_cursor_execute", trips.on_cursor)
    event.remove(Engine, "checkout", trips.on_checkout)
    for driver in trips.logged:
        driver.remove_query_logger(trips.on_query)


@pytest.fixture
def cache_off(app: Quart, monkeypatch: pytest.MonkeyPatch) -> None:
    """The response cache off (``FAQ_RESPONSE_CACHE_MB=0``): every read reaches PostgreSQL."""
    monkeypatch.setattr(app.extensions["tenancy"], "cache", None)


async def settle(trips: RoundTrips) -> None:
    """Wait (bounded) until background work of earlier requests (the key's ``last_used_at``,
    written at most once a minute) has sent its statements: 50 ms without a new one."""
    for _ in range(40):
        seen = len(trips.sent)
        await asyncio.sleep(0.05)
        if len(trips.sent) == seen:
            return


async def trips_of(org: OrgClient, trips: RoundTrips, path: str, **query: Any) -> list[str]:
    """The round trips of the second of two identical reads (the first warms the process)."""
    r = await org.get(path, scope="read", query=query or None)
    assert r.status_code == 200, await r.get_json()
    await settle(trips)
    del trips.sent[:]
    r = await org.get(path, scope="read", query=query or None)
    assert r.status_code == 200, await r.get_json()
    return list(trips.sent)


async def test_an_uncached_single_read_is_one_round_trip(
    org: OrgClient, cache_off: None, round_trips: RoundTrips
) -> None:
    q = await create(org, title="Where is my invoice?")
    for ref in (q["slug"], q["id"]):
        sent = await trips_of(org, round_trips, f"/questions/{ref}")
        assert len(sent) == 1, sent


async def test_an_uncached_list_read_is_one_round_trip(
    org: OrgClient, cache_off: None, round_trips: RoundTrips
) -> None:
    await create(org, title="Where is my invoice?")
    await create(org, title="How do I export my data?")
    sent = await trips_of(org, round_trips, "/questions", limit=20)
    assert len(sent) == 1, sent


async def test_uncached_reads_of_two_orgs_alternating_see_only_their_own(
    org: OrgClient, other_org: OrgClient, cache_off: None
) -> None:
    """Connections that served one org's reads serve the other's next: each read sees its own
    org's rows only (single reads and lists, by slug and by id)."""
    a = await create(org, title="Only in org A", slug="shared-slug-a")
    b = await create(other_org, title="Only in org B", slug="shared-slug-b")
    for _ in range(3):
        for mine, theirs, client in ((a, b, org), (b, a, other_org)):
            for ref in (mine["slug"], mine["id"]):
                r = await client.get(f"/questions/{ref}", scope="read")
                assert r.status_code == 200
                assert (await r.get_json())["data"]["id"] == mine["id"]
            for ref in (theirs["slug"], theirs["id"]):
                r = await client.get(f"/questions/{ref}", scope="read")
                assert r.status_code == 404
            r = await client.get("/questions", scope="read", query={"limit": 100})
            ids = {item["id"] for item in (await r.get_json())["data"]}
            assert mine["id"] in ids and theirs["id"] not in ids


async def test_a_create_sends_few_round_trips(org: OrgClient, round_trips: RoundTrips) -> None:
    """A create in an org without webhooks (a STARTER org: its cap takes a lock and a count):
    BEGIN, the org's binding, the category with the slugs taken (one statement), the question
    with its outbox events (one statement), the outbox marker, the cap's lock and count (last,
    so the lock is held only until the COMMIT), COMMIT: 8 round trips (10 before)."""
    category = await default_category(org)
    await create(org, category, title="Warm-up create")
    await settle(round_trips)
    del round_trips.sent[:]
    await create(org, category, title="Counted create")
    sent = list(round_trips.sent)
    assert len(sent) <= 8, sent
    (write,) = [s for s in sent if "INSERT INTO __tenant__.questions" in s]
    assert "INSERT INTO __tenant__.outbox" in write
