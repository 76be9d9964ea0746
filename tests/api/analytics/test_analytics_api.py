"""The analytics API (issue 17): ``/analytics/searches``, ``/analytics/questions`` and
``/questions/{idOrSlug}/analytics``, read from the daily aggregates after the actors ran
(``aggregate_recent`` for searches and votes, ``aggregate_views`` for page views).

Searches are seeded as raw ``search_events`` rows (their recording is another helper's work:
an end-to-end test through the help center and a publishable key belongs with it); votes and
views are made by readers of the help center."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter.feedback import flush_views
from tasks.help_center import aggregate_views
from tests.api.analytics.test_aggregation import (
    add_searches,
    aggregate,
    cast_vote,
    noon,
    sql,
    today,
)
from tests.api.helpcenter.helpers import enable, question
from tests.api.helpcenter.test_views import open_page, returning_reader
from tests.api.keys.helpers import as_key, make_public_key
from tests.fixtures.orgs import OrgClient


async def read_views(app: Quart, org: OrgClient, slug: str, readers: int) -> None:
    """``readers`` readers open the question's page (each counted once a day)."""
    for _ in range(readers):
        await open_page(returning_reader(app), f"/hc/{org.slug}/en/questions/{slug}")


async def count_views(app: Quart, engine: AsyncEngine) -> None:
    await flush_views(app)
    await aggregate_views(engine)


async def get_data(org: OrgClient, path: str, **query: Any) -> Any:
    r = await org.get(path, scope="read", query=query or None)
    body = await r.get_json()
    assert r.status_code == 200, body
    return body["data"]


async def error_of(org: OrgClient, path: str, status: int, **query: Any) -> dict[str, Any]:
    r = await org.get(path, scope="read", query=query or None)
    body = await r.get_json()
    assert r.status_code == status, body
    error: dict[str, Any] = body["error"]
    return error


@pytest.fixture
async def content(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> dict[str, dict[str, Any]]:
    """Three questions with views and votes, read and voted on by readers today (a voter
    opened the page too: a views 3 + 4, b 6 + 2, c 1); the other org has a question of the
    same slug with its own readers (7 + 4 views)."""
    await enable(org)
    await enable(other_org)
    a = await question(org, "Reset password", "Use the link.")
    b = await question(org, "Refunds", "Within 30 days.")
    c = await question(org, "Shipping", "Worldwide.")
    theirs = await question(other_org, "Reset password", "Theirs.")
    await read_views(app, org, a["slug"], 3)
    await read_views(app, org, b["slug"], 6)
    await read_views(app, org, c["slug"], 1)
    await read_views(app, other_org, theirs["slug"], 7)
    await cast_vote(app, org, a["slug"], True)
    await cast_vote(app, org, a["slug"], False, "Outdated")
    await cast_vote(app, org, a["slug"], False, "Too short")
    await cast_vote(app, org, a["slug"], False, "Too short")
    await cast_vote(app, org, b["slug"], True)
    await cast_vote(app, org, b["slug"], True)
    for _ in range(4):
        await cast_vote(app, other_org, theirs["slug"], False, "Theirs")
    await count_views(app, engine)
    await aggregate(engine, org)
    await aggregate(engine, other_org)
    return {"a": a, "b": b, "c": c, "theirs": theirs}


# ---- searches ------------------------------------------------------------------------------


async def test_searches_top_queries_and_no_results_by_count(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    d0, d3 = today(), today() - timedelta(days=3)
    await add_searches(
        engine,
        org,
        *[(noon(d0), "en", "password", 4, "q_a")] * 2,
        (noon(d3), "en", "password", 4, None),
        (noon(d3), "de", "password", 0, None),
        *[(noon(d0), "en", "refund", 2, "q_b")] * 4,
        *[(noon(d0), "en", "invoice", 0, None)] * 2,
        *[(noon(d3), "en", "gift card", 0, None)] * 2,
        (noon(today() - timedelta(days=40)), "en", "old", 0, None),  # before the window
    )
    await add_searches(engine, other_org, *[(noon(d0), "en", "password", 0, None)] * 9)
    await aggregate(engine, org)
    await aggregate(engine, other_org)
    data = await get_data(org, "/analytics/searches")
    assert data["since"] == (today() - timedelta(days=29)).isoformat()
    assert data["until"] == today().isoformat()
    assert data["topQueries"] == [
        {"query": "password", "searches": 4, "clicks": 2, "clickThroughRate": 0.5},
        {"query": "refund", "searches": 4, "clicks": 4, "clickThroughRate": 1.0},
        {"query": "gift card", "searches": 2, "clicks": 0, "clickThroughRate": 0.0},
        {"query": "invoice", "searches": 2, "clicks": 0, "clickThroughRate": 0.0},
    ]
    assert data["noResults"] == [
        {"query": "gift card", "searches": 2},
        {"query": "invoice", "searches": 2},
        {"query": "password", "searches": 1},
    ]
    # One locale's searches only.
    german = await get_data(org, "/analytics/searches", locale="de")
    assert german["topQueries"] == [
        {"query": "password", "searches": 1, "clicks": 0, "clickThroughRate": 0.0}
    ]
    assert german["noResults"] == [{"query": "password", "searches": 1}]
    # A window: today only; and a limit.
    one_day = await get_data(org, "/analytics/searches", since=today().isoformat(), limit=1)
    assert [q["query"] for q in one_day["topQueries"]] == ["refund"]
    assert one_day["noResults"] == [{"query": "invoice", "searches": 2}]
    # Nothing of the other org's counts, and nothing of this org's in theirs.
    theirs = await get_data(other_org, "/analytics/searches")
    assert theirs["topQueries"] == [
        {"query": "password", "searches": 9, "clicks": 0, "clickThroughRate": 0.0}
    ]


async def test_the_limit_is_between_1_and_100(org: OrgClient) -> None:
    for bad in ("0", "101", "x"):
        error = await error_of(org, "/analytics/searches", 400, limit=bad)
        assert error["code"] == "validation_failed"
        assert [d["field"] for d in error["details"]] == ["limit"]
    assert (await get_data(org, "/analytics/searches", limit="100"))["topQueries"] == []


# ---- questions -----------------------------------------------------------------------------


async def test_questions_totals_share_and_reasons(
    org: OrgClient, content: dict[str, dict[str, Any]]
) -> None:
    a, b, c = content["a"], content["b"], content["c"]
    data = await get_data(org, "/analytics/questions")
    assert data["sort"] == "views"
    # Views per audience are counted by analytics-collect (not run here): none yet.
    assert data["byAudience"] == []
    assert data["questions"] == [
        {
            "questionId": b["id"],
            "slug": b["slug"],
            "title": "Refunds",
            "views": 8,
            "helpful": 2,
            "unhelpful": 0,
            "helpfulShare": 1.0,
            "unhelpfulReasons": [],
            "byAudience": [],
        },
        {
            "questionId": a["id"],
            "slug": a["slug"],
            "title": "Reset password",
            "views": 7,
            "helpful": 1,
            "unhelpful": 3,
            "helpfulShare": 0.25,
            "unhelpfulReasons": [
                {"reason": "Too short", "count": 2},
                {"reason": "Outdated", "count": 1},
            ],
            "byAudience": [],
        },
        {
            "questionId": c["id"],
            "slug": c["slug"],
            "title": "Shipping",
            "views": 1,
            "helpful": 0,
            "unhelpful": 0,
            "helpfulShare": None,  # no votes
            "unhelpfulReasons": [],
            "byAudience": [],
        },
    ]


async def test_questions_sorts_and_limit(
    org: OrgClient, content: dict[str, dict[str, Any]]
) -> None:
    def slugs(data: dict[str, Any]) -> list[str]:
        return [q["slug"] for q in data["questions"]]

    a, b, c = (content[k]["slug"] for k in "abc")
    assert slugs(await get_data(org, "/analytics/questions", sort="views")) == [b, a, c]
    # Ties (0 helpful for c; 0 unhelpful for b and c) go by slug.
    assert slugs(await get_data(org, "/analytics/questions", sort="helpful")) == [b, a, c]
    assert slugs(await get_data(org, "/analytics/questions", sort="unhelpful")) == [
        a,
        *sorted([b, c]),
    ]
    assert slugs(await get_data(org, "/analytics/questions", sort="unhelpful", limit=1)) == [a]
    error = await error_of(org, "/analytics/questions", 400, sort="stars")
    assert error["code"] == "validation_failed"
    assert [d["field"] for d in error["details"]] == ["sort"]


async def test_deleted_questions_are_left_out(
    org: OrgClient, content: dict[str, dict[str, Any]]
) -> None:
    r = await org.delete(f"/questions/{content['b']['id']}", scope="write")
    assert r.status_code == 204
    data = await get_data(org, "/analytics/questions")
    assert [q["questionId"] for q in data["questions"]] == [content["a"]["id"], content["c"]["id"]]


async def test_another_orgs_readers_are_never_counted(
    org: OrgClient, other_org: OrgClient, content: dict[str, dict[str, Any]]
) -> None:
    mine = await get_data(org, f"/questions/{content['a']['slug']}/analytics")
    assert (mine["views"], mine["helpful"], mine["unhelpful"]) == (7, 1, 3)
    theirs = await get_data(other_org, "/analytics/questions")
    assert [(q["slug"], q["views"], q["unhelpful"]) for q in theirs["questions"]] == [
        (content["theirs"]["slug"], 11, 4)
    ]


# ---- one question --------------------------------------------------------------------------


async def test_one_question_day_by_day_with_zeros(
    engine: AsyncEngine, org: OrgClient, content: dict[str, dict[str, Any]]
) -> None:
    a = content["a"]
    five_days_ago = today() - timedelta(days=5)
    # Counted on earlier days by the actors: views five days ago, and a vote cast then.
    await sql(
        engine,
        org,
        "INSERT INTO question_views_daily VALUES (:q, :d, 6)",
        q=a["id"],
        d=five_days_ago,
    )
    await sql(
        engine,
        org,
        "INSERT INTO question_feedback_daily VALUES (:q, :d, 0, 2, '{\"Outdated\": 2}')",
        q=a["id"],
        d=five_days_ago,
    )
    data = await get_data(org, f"/questions/{a['id']}/analytics")
    assert (data["questionId"], data["slug"], data["title"]) == (a["id"], a["slug"], a["title"])
    assert (data["views"], data["helpful"], data["unhelpful"]) == (13, 1, 5)
    assert data["helpfulShare"] == round(1 / 6, 4)
    assert data["unhelpfulReasons"] == [
        {"reason": "Outdated", "count": 3},
        {"reason": "Too short", "count": 2},
    ]
    days = data["days"]
    assert len(days) == 30  # every day of the default window, oldest first
    assert days[0]["day"] == (today() - timedelta(days=29)).isoformat()
    assert days[-1] == {"day": today().isoformat(), "views": 7, "helpful": 1, "unhelpful": 3}
    assert days[-6] == {"day": five_days_ago.isoformat(), "views": 6, "helpful": 0, "unhelpful": 2}
    zeros = [d for d in days if d["day"] not in (today().isoformat(), five_days_ago.isoformat())]
    assert len(zeros) == 28
    assert all((d["views"], d["helpful"], d["unhelpful"]) == (0, 0, 0) for d in zeros)
    # By slug, over a window of three days.
    since = (today() - timedelta(days=2)).isoformat()
    short = await get_data(org, f"/questions/{a['slug']}/analytics", since=since)
    assert [d["day"] for d in short["days"]] == [
        (today() - timedelta(days=n)).isoformat() for n in (2, 1, 0)
    ]
    assert (short["views"], short["unhelpful"]) == (7, 3)


async def test_an_unknown_or_another_orgs_question_is_404(
    org: OrgClient, content: dict[str, dict[str, Any]]
) -> None:
    for ref in (content["theirs"]["id"], "no-such-question", "q_01ARZ3NDEKTSV4RRFFQ69G5FAV"):
        error = await error_of(org, f"/questions/{ref}/analytics", 404)
        assert error["code"] == "question_not_found"
    r = await org.delete(f"/questions/{content['c']['id']}", scope="write")
    assert r.status_code == 204
    error = await error_of(org, f"/questions/{content['c']['id']}/analytics", 404)
    assert error["code"] == "question_not_found"


# ---- windows, scopes, docs -----------------------------------------------------------------


PATHS = ("/analytics/searches", "/analytics/questions", "/questions/{ref}/analytics")


@pytest.fixture
async def paths(org: OrgClient) -> list[str]:
    await enable(org)
    q = await question(org, "Windows", "Open.")
    return [p.format(ref=q["slug"]) for p in PATHS]


async def test_windows_default_to_30_days_and_reach_400_days_back(
    org: OrgClient, paths: list[str]
) -> None:
    oldest = today() - timedelta(days=400)
    for path in paths:
        data = await get_data(org, path)
        assert (data["since"], data["until"]) == (
            (today() - timedelta(days=29)).isoformat(),
            today().isoformat(),
        )
        data = await get_data(org, path, since=oldest.isoformat())
        assert (data["since"], data["until"]) == (oldest.isoformat(), today().isoformat())
        # until alone: the 30 days ending then.
        until = today() - timedelta(days=100)
        data = await get_data(org, path, until=until.isoformat())
        assert data["since"] == (until - timedelta(days=29)).isoformat()
        # Full timestamps are taken as their UTC day.
        data = await get_data(
            org,
            path,
            since=f"{today() - timedelta(days=1)}T23:30:00-02:00",
            until=f"{today()}T00:00:00Z",
        )
        assert (data["since"], data["until"]) == (today().isoformat(), today().isoformat())
    days = (await get_data(org, paths[2], since=oldest.isoformat()))["days"]
    assert len(days) == 401


async def test_bad_windows_are_400_naming_the_field(org: OrgClient, paths: list[str]) -> None:
    too_old = (today() - timedelta(days=401)).isoformat()
    tomorrow = (today() + timedelta(days=1)).isoformat()
    cases = [
        ({"since": too_old}, "since"),
        (
            {"since": today().isoformat(), "until": (today() - timedelta(days=1)).isoformat()},
            "since",
        ),
        ({"until": tomorrow}, "until"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-30"}, "since"),
        ({"until": "20260101"}, "until"),
        ({"until": ""}, "until"),
        ({"since": "2026-01-01", "bogus": "1"}, "bogus"),
    ]
    for path in paths:
        for query, field in cases:
            error = await error_of(org, path, 400, **query)
            assert error["code"] == "validation_failed", (path, query)
            assert [d["field"] for d in error["details"]] == [field], (path, query, error)


async def test_read_scope_reads_and_a_publishable_key_is_refused(
    org: OrgClient, paths: list[str]
) -> None:
    public = await make_public_key(org)
    for path in paths:
        for scope in ("read", "write", "admin"):
            assert (await org.get(path, scope=scope)).status_code == 200, (path, scope)
        r = await as_key(org, public["key"], "GET", path)
        assert r.status_code == 403, path
        assert (await r.get_json())["error"]["code"] == "insufficient_scope"
        assert (await org.get(path, scope=None)).status_code == 401


async def test_the_endpoints_are_documented_under_analytics(client: Any) -> None:
    schema = await (await client.get("/openapi.json")).get_json()
    for path in ("/analytics/searches", "/analytics/questions", "/questions/{ref}/analytics"):
        operation = schema["paths"][f"/api/v1/{{org}}{path}"]["get"]
        assert operation["tags"] == ["analytics"], path
        assert "403" in operation["responses"]
