"""Content analytics recording (issue 17): readers' searches through the help center and
publishable keys, and the result opened next, recorded off the request path (a per-process
buffer, then Redis, bounded per org per day), moved into ``search_events`` by the
``analytics-collect`` job. Visitors are hashed with a daily salt; nothing raw is kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.analytics import recording
from api.analytics.recording import normalise_query, recorder_for, search_events
from api.helpcenter.visitors import VISITOR_COOKIE, new_visitor_token
from api.http.binding import Tenancy
from tasks.analytics import collect
from tenancy.db import tenant_session
from tenancy.redis import loop_client
from tests.api.helpcenter.helpers import enable, question
from tests.api.keys.helpers import as_key, make_public_key
from tests.fixtures.orgs import OrgClient


@pytest.fixture
async def parcel(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "Where is my parcel?", "On its way to you.")


@pytest.fixture
async def refund(org: OrgClient, parcel: dict[str, Any]) -> dict[str, Any]:
    return await question(org, "How do I get a refund of my parcel?", "Ask support.")


async def recorded(app: Quart, engine: AsyncEngine, org: OrgClient) -> list[dict[str, Any]]:
    """Flush this process's buffer, run the collect job, read the org's search_events."""
    await recorder_for(app.extensions).flush()
    await collect(engine)
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(select(search_events).order_by(search_events.c.at))
        return [dict(r._mapping) for r in rows]


def reader(app: Quart) -> Any:
    """A browser of its own (its own cookie, made on an earlier day)."""
    client = app.test_client()
    day = datetime.now(UTC).date() - timedelta(days=3)
    token = new_visitor_token(day)
    client.set_cookie("localhost", VISITOR_COOKIE, token, path="/hc")
    return client


async def hc_search(client: Any, org: OrgClient, q: str) -> None:
    r = await client.get(f"/hc/{org.slug}/en/search", query_string={"q": q})
    assert r.status_code == 200


async def hc_open(client: Any, org: OrgClient, slug: str) -> None:
    assert (await client.get(f"/hc/{org.slug}/en/questions/{slug}")).status_code == 200


def test_normalise_query() -> None:
    assert normalise_query("  Where   IS\tmy\n PARCEL ") == "where is my parcel"
    assert normalise_query("\uff30\uff21\uff32\uff23\uff25\uff2c") == "parcel"  # NFKC: full-width
    assert normalise_query("Straße") == "strasse"  # casefold
    assert normalise_query("   ") == ""
    assert len(normalise_query("x" * 500)) == 200


async def test_a_help_center_search_is_recorded(
    app: Quart, engine: AsyncEngine, org: OrgClient, parcel: dict[str, Any]
) -> None:
    client = reader(app)
    await hc_search(client, org, "  Where is my   PARCEL ")
    await hc_search(client, org, "zebra")  # nothing found
    await hc_search(client, org, "   ")  # not a search
    rows = await recorded(app, engine, org)
    assert [(r["source"], r["locale"], r["query"], r["results"]) for r in rows] == [
        ("help_center", "en", "where is my parcel", 1),
        ("help_center", "en", "zebra", 0),
    ]
    assert all(r["clicked_question_id"] is None for r in rows)
    assert rows[0]["id"] != rows[1]["id"] and rows[0]["visitor"] == rows[1]["visitor"]


async def test_a_cached_search_page_is_recorded_with_its_count(
    app: Quart, engine: AsyncEngine, org: OrgClient, parcel: dict[str, Any]
) -> None:
    ext: Tenancy = app.extensions["tenancy"]
    assert ext.cache is not None
    await hc_search(reader(app), org, "parcel")
    hits = ext.cache.hits
    await hc_search(reader(app), org, "parcel")
    assert ext.cache.hits == hits + 1  # the second page came from the cache
    rows = await recorded(app, engine, org)
    assert [(r["query"], r["results"]) for r in rows] == [("parcel", 1), ("parcel", 1)]
    assert rows[0]["visitor"] != rows[1]["visitor"]  # two readers


async def test_a_publishable_keys_search_is_recorded_even_from_the_cache(
    app: Quart, engine: AsyncEngine, org: OrgClient, refund: dict[str, Any]
) -> None:
    key = (await make_public_key(org))["key"]
    ext: Tenancy = app.extensions["tenancy"]
    assert ext.cache is not None
    hits = ext.cache.hits
    for _ in range(3):
        r = await as_key(org, key, "GET", "/questions?q=Parcel&limit=1", address="10.1.2.3")
        assert r.status_code == 200 and len((await r.get_json())["data"]) == 1
    assert ext.cache.hits == hits + 2  # the second and third came from the cache
    r = await as_key(org, key, "GET", "/questions?q=nothing+here", address="10.1.2.3")
    assert r.status_code == 200
    rows = await recorded(app, engine, org)
    # The count is the first page's items (limit 1), not the matches.
    assert [(r["source"], r["locale"], r["query"], r["results"]) for r in rows] == [
        ("api", "en", "parcel", 1),
        ("api", "en", "parcel", 1),
        ("api", "en", "parcel", 1),
        ("api", "en", "nothing here", 0),
    ]


async def test_a_secret_keys_search_is_not_recorded(
    app: Quart, engine: AsyncEngine, org: OrgClient, parcel: dict[str, Any]
) -> None:
    for scope in ("read", "admin"):
        r = await org.get("/questions?q=parcel", scope=scope)
        assert r.status_code == 200 and (await r.get_json())["data"]
    assert await recorded(app, engine, org) == []


async def test_the_result_opened_next_is_the_click(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    parcel: dict[str, Any],
    refund: dict[str, Any],
) -> None:
    client = reader(app)
    await hc_search(client, org, "parcel")
    await hc_open(client, org, refund["slug"])
    await hc_open(client, org, parcel["slug"])  # a second open: the first one stays
    await hc_search(reader(app), org, "refund")  # another reader, who opens nothing
    rows = await recorded(app, engine, org)
    assert [(r["query"], r["clicked_question_id"]) for r in rows] == [
        ("parcel", refund["id"]),
        ("refund", None),
    ]
    await hc_open(client, org, parcel["slug"])  # later still: nothing changes
    rows = await recorded(app, engine, org)
    assert [r["clicked_question_id"] for r in rows] == [refund["id"], None]


async def test_a_publishable_keys_single_read_is_the_click(
    app: Quart, engine: AsyncEngine, org: OrgClient, parcel: dict[str, Any]
) -> None:
    key = (await make_public_key(org))["key"]
    r = await as_key(org, key, "GET", "/questions?q=parcel", address="10.9.9.9")
    assert r.status_code == 200
    # Another address with the same key is another visitor: its read is not this click.
    other = await as_key(org, key, "GET", f"/questions/{parcel['slug']}", address="10.9.9.8")
    assert other.status_code == 200
    r = await as_key(org, key, "GET", f"/questions/{parcel['slug']}", address="10.9.9.9")
    assert r.status_code == 200
    rows = await recorded(app, engine, org)
    assert [(r["source"], r["clicked_question_id"]) for r in rows] == [("api", parcel["id"])]


async def test_an_open_after_30_minutes_or_after_another_search_is_not_a_click(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    parcel: dict[str, Any],
    refund: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start = datetime.now(UTC).replace(hour=1, minute=0).timestamp()
    clock = [start]
    monkeypatch.setattr(recording, "now", lambda: clock[0])
    late = reader(app)
    await hc_search(late, org, "parcel")
    clock[0] += 30 * 60 + 1
    await hc_open(late, org, parcel["slug"])
    again = reader(app)
    await hc_search(again, org, "parcel")
    clock[0] += 60
    await hc_search(again, org, "refund")
    clock[0] += 60
    await hc_open(again, org, refund["slug"])  # clicks the second search only
    within = reader(app)
    # A search that finds the parcel ("where" alone is a stopword: /answers finds nothing).
    await hc_search(within, org, "where is my parcel")
    clock[0] += 30 * 60 - 1
    await hc_open(within, org, parcel["slug"])
    rows = await recorded(app, engine, org)
    assert [(r["query"], r["clicked_question_id"]) for r in rows] == [
        ("parcel", None),
        ("parcel", None),
        ("refund", refund["id"]),
        ("where is my parcel", parcel["id"]),
    ]


async def test_a_search_that_found_nothing_has_no_click_and_ends_the_one_before(
    app: Quart, engine: AsyncEngine, org: OrgClient, parcel: dict[str, Any]
) -> None:
    # A reader searches, finds nothing on a second try, then opens a question from elsewhere:
    # it is neither search's result (the second had none; the first was followed by another).
    browsing = reader(app)
    await hc_search(browsing, org, "parcel")
    await hc_search(browsing, org, "unicorn")
    await hc_open(browsing, org, parcel["slug"])
    rows = await recorded(app, engine, org)
    assert [(r["query"], r["results"], r["clicked_question_id"]) for r in rows] == [
        ("parcel", 1, None),
        ("unicorn", 0, None),
    ]


async def test_visitors_are_hashed_with_a_daily_salt_and_nothing_raw_is_kept(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    parcel: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = (await make_public_key(org))["key"]
    client = reader(app)
    cookie = next(c.value for c in client.cookie_jar).split(".")[0]
    day = datetime.now(UTC).replace(hour=12, minute=0)
    for at in (day - timedelta(days=1), day):
        monkeypatch.setattr(recording, "now", lambda at=at: at.timestamp())
        await hc_search(client, org, "parcel")
        await as_key(org, key, "GET", "/questions?q=parcel", address="10.77.66.55")
    await recorder_for(app.extensions).flush()
    redis = loop_client()
    stored: list[str] = []
    async for name in redis.scan_iter(match="faq:an:*", count=1_000):
        stored.append(name.decode())
        kind = await redis.type(name)
        if kind == b"list":
            stored.extend(str(v) for v in await redis.lrange(name, 0, -1))  # type: ignore[misc]
        elif kind == b"string":
            stored.append(str(await redis.get(name)))
        elif kind == b"set":
            stored.extend(str(m) for m in await redis.smembers(name))  # type: ignore[misc]
    assert any(org.info.id in s for s in stored)
    assert not [s for s in stored if cookie in s or "10.77.66.55" in s or "127.0.0.1" in s]
    rows = await recorded(app, engine, org)
    by_source: dict[str, list[str]] = {}
    for row in rows:
        by_source.setdefault(row["source"], []).append(row["visitor"])
        assert cookie not in str(row) and "10.77.66.55" not in str(row)
        assert "127.0.0.1" not in str(row)
    # The same reader on two days: two hashes.
    assert len(by_source["help_center"]) == 2 and len(set(by_source["help_center"])) == 2
    assert len(by_source["api"]) == 2 and len(set(by_source["api"])) == 2


async def test_an_orgs_searches_of_a_day_are_capped(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    parcel: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recording, "MAX_SEARCHES_PER_ORG_DAY", 2)
    client = reader(app)
    for q in ("one", "two", "three"):
        await hc_search(client, org, q)
    await recorder_for(app.extensions).flush()
    await hc_search(client, org, "four")
    rows = await recorded(app, engine, org)
    assert [r["query"] for r in rows] == ["one", "two"]


async def test_the_kill_switch_records_nothing(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    parcel: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app.extensions["settings"], "faq_content_analytics", False)
    key = (await make_public_key(org))["key"]
    client = reader(app)
    await hc_search(client, org, "parcel")
    await hc_open(client, org, parcel["slug"])
    await as_key(org, key, "GET", "/questions?q=parcel", address="10.3.3.3")
    await as_key(org, key, "GET", f"/questions/{parcel['id']}", address="10.3.3.3")
    assert await recorded(app, engine, org) == []
    names = [n async for n in loop_client().scan_iter(match=f"faq:an:*{org.info.id}*")]
    assert names == []
