"""Content analytics and audiences (issue 39): searches and views are counted per audience of
the reader who made them (``byAudience``, ``null``: readers of no audience), one row per
audience a day; and no key that cannot read restricted content reaches an analytics read, so
restricted titles never show there to it."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.analytics import recording
from api.analytics.recording import FLUSH_SECONDS, recorder_for, stamp
from tasks.analytics import collect
from tenancy.db import tenant_session
from tests.api.analytics.test_end_to_end import run_jobs
from tests.api.analytics.test_recording import hc_open, hc_search, reader
from tests.api.audiences.test_leak_surfaces import WORD, Site, build
from tests.api.keys.helpers import SITE, as_key
from tests.api.mcp.conftest import connect, mcp_url, served  # noqa: F401 (the fixture)
from tests.conftest import OrgFactory
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient


@pytest.fixture
async def site(org_factory: OrgFactory, engine: AsyncEngine) -> Site:
    """A PRO org with audiences ``a`` and ``b``, reader tokens, a publishable key, and one
    question for everyone, one for ``a``, one for ``b``, one for ``a`` in a category for
    ``b`` (``tests.api.audiences.test_leak_surfaces``)."""
    return await build(org_factory, engine)


async def data(org: OrgClient, path: str, **query: Any) -> Any:
    r = await org.get(path, scope="read", query=query or None)
    body = await r.get_json()
    assert r.status_code == 200, body
    return body["data"]


async def search_as(site: Site, token: str | None, q: str, address: str) -> None:
    headers = {"Origin": SITE} | ({"X-Reader-Token": token} if token else {})
    r = await as_key(site.org, site.key, "GET", f"/answers?q={q}", headers=headers, address=address)
    assert r.status_code == 200, await r.get_data()


async def test_searches_are_counted_under_each_audience_of_the_reader(
    app: Quart, engine: AsyncEngine, site: Site
) -> None:
    await search_as(site, site.token("a"), WORD, "10.1.0.1")
    await search_as(site, site.token("a"), "alpha insurance", "10.1.0.1")
    await search_as(site, site.token("a,b"), WORD, "10.1.0.2")
    await search_as(site, None, WORD, "10.1.0.3")  # anonymous
    await search_as(site, None, "unicorn", "10.1.0.3")  # anonymous, nothing found
    # A token's slug that names none of the org's audiences makes no row of its own: that
    # reader sees what anonymous readers see, and is counted with them.
    await search_as(site, site.token("not-ours"), WORD, "10.1.0.4")
    await run_jobs(app, engine)

    async with tenant_session(engine, site.org.info.schema_name) as session:
        stored = await session.execute(
            text("SELECT query, audiences FROM search_events ORDER BY at")
        )
        rows = [(r.query, list(r.audiences)) for r in stored]
    assert rows == [
        (WORD, ["a"]),
        ("alpha insurance", ["a"]),
        (WORD, ["a", "b"]),
        (WORD, []),
        ("unicorn", []),
        (WORD, ["not-ours"]),
    ]
    searches = await data(site.org, "/analytics/searches")
    assert searches["byAudience"] == [
        {"audience": None, "searches": 3, "clicks": 0, "noResults": 1},
        {"audience": "a", "searches": 3, "clicks": 0, "noResults": 0},
        {"audience": "b", "searches": 1, "clicks": 0, "noResults": 0},
    ]
    # The existing figures are unchanged: each search once, whatever its audiences.
    assert {q["query"]: q["searches"] for q in searches["topQueries"]}[WORD] == 4
    # From the raw searches of one source, the same; of another source, nothing.
    raw = await data(site.org, "/analytics/searches", source="api")
    assert raw["byAudience"] == searches["byAudience"]
    assert (await data(site.org, "/analytics/searches", source="mcp"))["byAudience"] == []
    # One row per audience per day and locale, never one per reader or per search.
    async with tenant_session(engine, site.org.info.schema_name) as session:
        count = await session.scalar(text("SELECT count(*) FROM search_audience_daily"))
    assert count == 3


async def open_as(app: Quart, site: Site, question: str, raw: str, audiences: Any) -> None:
    """What a page or a single read of a signed-in reader records (``Recorder.open``)."""
    visitor, at = stamp(app.extensions, site.org.info.id, raw)
    recorder_for(app.extensions).open(
        site.org.info.id, visitor=visitor, at=at, question_id=question, audiences=audiences
    )


async def test_views_are_counted_per_audience_once_per_reader_a_day(
    app: Quart, engine: AsyncEngine, site: Site
) -> None:
    alpha, everyone = site.made["alpha"], site.made["open"]
    # An anonymous reader of the help center (a real page view), twice: one view.
    browser = reader(app)
    await hc_open(browser, site.org, everyone["slug"])
    await hc_open(browser, site.org, everyone["slug"])
    # Signed-in readers: of a (twice: one view), of a and b, of a again (another reader).
    await open_as(app, site, alpha["id"], "reader-1", ("a",))
    await open_as(app, site, alpha["id"], "reader-1", ("a",))
    await open_as(app, site, alpha["id"], "reader-2", ("b", "a"))
    await open_as(app, site, alpha["id"], "reader-3", ("a",))
    await open_as(app, site, everyone["id"], "reader-2", ("a", "b"))
    await run_jobs(app, engine)
    await collect(engine)  # a recount changes nothing

    questions = await data(site.org, "/analytics/questions")
    # Listed: the questions with help-center views or votes (``views``), as before.
    [listed] = questions["questions"]
    assert (listed["slug"], listed["views"]) == (everyone["slug"], 1)
    assert listed["byAudience"] == [
        {"audience": None, "views": 1},
        {"audience": "a", "views": 1},
        {"audience": "b", "views": 1},
    ]
    # Every question's readers, listed or not.
    assert questions["byAudience"] == [
        {"audience": "a", "views": 4},
        {"audience": "b", "views": 2},
        {"audience": None, "views": 1},
    ]
    one = await data(site.org, f"/questions/{alpha['slug']}/analytics")
    assert one["byAudience"] == [{"audience": "a", "views": 3}, {"audience": "b", "views": 1}]


async def test_audience_views_of_an_org_day_are_capped(
    app: Quart, engine: AsyncEngine, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording, "MAX_AUDIENCE_VIEWS_PER_ORG_DAY", 2)
    for n in range(4):
        await open_as(app, site, site.made["open"]["id"], f"reader-{n}", ())
    await run_jobs(app, engine)
    questions = await data(site.org, "/analytics/questions")
    assert questions["byAudience"] == [{"audience": None, "views": 2}]


@pytest.mark.slow
async def test_an_assistants_search_is_counted_under_its_readers_audiences(
    engine: AsyncEngine,
    served: ApiProcess,  # noqa: F811
    site: Site,
) -> None:
    token = site.token("b")
    assert token is not None
    async with connect(mcp_url(served, site.org.slug), site.key, **{"X-Reader-Token": token}) as c:
        found = await c.call_tool("search_faq", {"query": WORD})
        assert not found.is_error, found.content
    async with connect(mcp_url(served, site.org.slug), site.key) as c:
        assert not (await c.call_tool("search_faq", {"query": "unicorn"})).is_error
    await asyncio.sleep(FLUSH_SECONDS * 3)  # the served process flushes its own buffer
    await collect(engine)
    mcp = await data(site.org, "/analytics/searches", source="mcp")
    assert mcp["byAudience"] == [
        {"audience": None, "searches": 1, "clicks": 0, "noResults": 1},
        {"audience": "b", "searches": 1, "clicks": 0, "noResults": 0},
    ]


# ---- who reads analytics ------------------------------------------------------------------

ANALYTICS_READS = (
    "/analytics/searches",
    "/analytics/questions",
    "/analytics/gaps",
)


async def test_a_publishable_key_never_reaches_analytics(
    app: Quart, engine: AsyncEngine, site: Site
) -> None:
    # Readers of every audience searched for and opened the restricted questions.
    for who in ("a", "b", "a,b"):
        await search_as(site, site.token(who), WORD, "10.2.0.1")
        for name in ("alpha", "beta", "nested"):
            await open_as(app, site, site.made[name]["id"], f"reader-{who}", tuple(who.split(",")))
    await search_as(site, None, "restricted beta customs", "10.2.0.2")
    await run_jobs(app, engine)
    restricted = [site.made[n] for n in ("alpha", "beta", "nested")]
    # Their page views, as the help center counts signed-in readers' (issue 39, its sign-in).
    async with tenant_session(engine, site.org.info.schema_name) as session:
        for q in restricted:
            await session.execute(
                text("INSERT INTO question_views_daily VALUES (:q, :day, 5)"),
                {"q": q["id"], "day": datetime.now(UTC).date()},
            )
        await session.commit()
    # A secret key sees them: there is something that could leak.
    everything = str(await data(site.org, "/analytics/questions"))
    assert all(q["title"] in everything for q in restricted)

    paths = [*ANALYTICS_READS, *(f"/questions/{q['slug']}/analytics" for q in restricted)]
    for who in ("anonymous", "a", "b", "a,b"):
        token = site.token(who)
        headers = {"Origin": SITE} | ({"X-Reader-Token": token} if token else {})
        for path in paths:
            r = await as_key(site.org, site.key, "GET", path, headers=headers)
            body = (await r.get_data()).decode()
            assert r.status_code == 403, (who, path, body)
            assert (await r.get_json())["error"]["code"] == "insufficient_scope"
            for q in restricted:
                for value in (q["title"], q["id"], q["slug"]):
                    if value not in path:
                        assert value not in body, (who, path, value)
        accept = "/analytics/gaps/suggestions/syn_x/accept"
        r = await as_key(site.org, site.key, "POST", accept, headers=headers)
        assert r.status_code == 403, (who, await r.get_data())


def test_the_recorded_audiences_are_sorted_slugs_once_each() -> None:
    event = recording._event(
        "s", "v" * 32, time.time(), ("api", "en", "q", 1, None, ("b", "a", "a", "x y")), "se_1"
    )
    assert event is not None and '"audiences":["a","b"]' in event
    opened = recording._event("o", "v" * 32, 1.0, ("q_1", ("b", "a")), "se_2")
    assert opened == "o " + "v" * 32 + " 1.0 q_1 a,b"
    anonymous = recording._event("o", "v" * 32, 1.0, ("q_1", ()), "se_3")
    assert anonymous == "o " + "v" * 32 + " 1.0 q_1 "


async def test_a_signed_in_help_center_readers_views_and_searches_count_under_its_audiences(
    app: Quart, engine: AsyncEngine, site: Site
) -> None:
    alpha = site.made["alpha"]
    browser = reader(app)
    signed = await browser.get(f"/hc/{site.org.slug}/access/jwt?token={site.token('a')}")
    assert signed.status_code == 303
    await hc_open(browser, site.org, alpha["slug"])  # a restricted page: only a reader of a
    await hc_search(browser, site.org, WORD)
    await run_jobs(app, engine)
    one = await data(site.org, f"/questions/{alpha['slug']}/analytics")
    assert one["byAudience"] == [{"audience": "a", "views": 1}]
    searches = await data(site.org, "/analytics/searches", source="help_center")
    assert searches["byAudience"] == [{"audience": "a", "searches": 1, "clicks": 0, "noResults": 0}]
