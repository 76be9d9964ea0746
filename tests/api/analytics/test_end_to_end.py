"""Content analytics end to end (issue 17): readers search through the help center and through
a publishable key, open what they found and vote; after the jobs ran (``analytics-collect``
and ``help-center-views``, as the worker runs them) the org reads it all through the API."""

from __future__ import annotations

from typing import Any

from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from api.analytics.recording import recorder_for
from api.helpcenter.feedback import flush_views
from tasks.analytics import collect
from tasks.help_center import aggregate_views
from tests.api.analytics.test_aggregation import cast_vote
from tests.api.analytics.test_recording import hc_open, hc_search, reader
from tests.api.helpcenter.helpers import enable, question
from tests.api.keys.helpers import as_key, make_public_key
from tests.fixtures.orgs import OrgClient


async def run_jobs(app: Quart, engine: AsyncEngine) -> None:
    await recorder_for(app.extensions).flush()
    await flush_views(app)
    await collect(engine)
    await aggregate_views(engine)


async def data(org: OrgClient, path: str) -> Any:
    r = await org.get(path, scope="read")
    body = await r.get_json()
    assert r.status_code == 200, body
    return body["data"]


async def test_searches_clicks_views_and_votes_reach_the_analytics(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await enable(org)
    parcel = await question(org, "Where is my parcel?", "On its way to you.")
    await question(org, "How do I pay?", "By card.")
    key = (await make_public_key(org))["key"]

    # Nothing is counted before the jobs run: the endpoints read the daily aggregates.
    assert (await data(org, "/analytics/searches"))["topQueries"] == []

    # A help center reader finds the parcel question and opens it; another finds nothing.
    first = reader(app)
    await hc_search(first, org, "Parcel")
    await hc_open(first, org, parcel["slug"])
    await hc_search(reader(app), org, "unicorn")
    # A reader of the org's own site (publishable key) searches, then reads the question.
    r = await as_key(org, key, "GET", "/questions?q=parcel", address="10.7.7.7")
    assert r.status_code == 200 and (await r.get_json())["data"]
    r = await as_key(org, key, "GET", f"/questions/{parcel['slug']}", address="10.7.7.7")
    assert r.status_code == 200
    # A secret key's search is the org's own, not a reader's.
    assert (await org.get("/questions?q=parcel", scope="read")).status_code == 200
    # Another reader opens it and says it did not help.
    await cast_vote(app, org, parcel["slug"], False, "It does not say when")

    await run_jobs(app, engine)

    searches = await data(org, "/analytics/searches")
    assert searches["topQueries"][0] == {
        "query": "parcel",
        "searches": 2,
        "clicks": 2,
        "clickThroughRate": 1.0,
    }
    assert searches["noResults"] == [{"query": "unicorn", "searches": 1}]
    assert [q["query"] for q in searches["topQueries"]] == ["parcel", "unicorn"]

    questions = (await data(org, "/analytics/questions?sort=unhelpful"))["questions"]
    assert [(q["slug"], q["views"], q["helpful"], q["unhelpful"]) for q in questions] == [
        (parcel["slug"], 2, 0, 1)
    ]
    assert questions[0]["helpfulShare"] == 0.0
    assert questions[0]["unhelpfulReasons"] == [{"reason": "It does not say when", "count": 1}]
    one = await data(org, f"/questions/{parcel['slug']}/analytics")
    assert one["days"][-1]["views"] == 2 and one["days"][-1]["unhelpful"] == 1
    assert sum(d["views"] for d in one["days"]) == 2

    # Running the jobs again counts nothing twice; another org sees none of it.
    await run_jobs(app, engine)
    assert await data(org, "/analytics/searches") == searches
    theirs = await data(other_org, "/analytics/searches")
    assert theirs["topQueries"] == [] and theirs["noResults"] == []
