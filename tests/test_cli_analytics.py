"""``faq analytics SLUG`` (issue 17), run as ops run it: the top searches, the searches that
found nothing and the least helpful answers of the last 30 days, as aligned tables with a
sparkline of each row's daily trend."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.analytics.test_aggregation import add_searches, aggregate, cast_vote, noon, today
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient
from tests.test_cli import faq

pytestmark = pytest.mark.slow

BARS = "▁▂▃▄▅▆▇█"


def table(out: str, title: str) -> list[str]:
    """The lines of one table: its header, then its rows (up to the blank line)."""
    lines = out.splitlines()
    start = lines.index(title) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def cells(header: str, row: str) -> dict[str, str]:
    """A row's cells under the header's columns (aligned: each starts where its header
    does, or ends where it ends for right-aligned numbers)."""
    names = header.split()
    starts = [header.index(n) for n in names]
    ends = [*starts[1:], len(row)]
    return {n: row[s:e].strip() for n, s, e in zip(names, starts, ends, strict=True)}


async def test_analytics_prints_three_tables_with_sparklines(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await enable(org)
    reset = await question(org, "Reset password", "Use the link.")
    refund = await question(org, "Refunds", "Within 30 days.")
    await cast_vote(app, org, reset["slug"], False, "Too short")
    await cast_vote(app, org, reset["slug"], False, "Too short")
    await cast_vote(app, org, reset["slug"], True)
    await cast_vote(app, org, refund["slug"], True)  # helpful only: not among the least
    d0, d2 = today(), today() - timedelta(days=2)
    await add_searches(
        engine,
        org,
        *[(noon(d0), "en", "reset password", 3, reset["id"])] * 3,
        (noon(d2), "en", "reset password", 3, None),
        *[(noon(d0), "en", "gift card", 0, None)] * 2,
    )
    await add_searches(engine, other_org, *[(noon(d0), "en", "not mine", 0, None)] * 5)
    await aggregate(engine, org)
    await aggregate(engine, other_org)

    run = await asyncio.to_thread(faq, "analytics", org.slug)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert f"{(today() - timedelta(days=29)).isoformat()} to {today().isoformat()}" in out
    assert "not mine" not in out

    header, *rows = table(out, "Top searches")
    assert header.split() == ["QUERY", "SEARCHES", "CLICKS", "CTR", "TREND"]
    top = [cells(header, r) for r in rows]
    assert top == [
        {
            "QUERY": "reset password",
            "SEARCHES": "4",
            "CLICKS": "3",
            "CTR": "75%",
            "TREND": "▁" * 27 + "▃▁█",
        },
        {
            "QUERY": "gift card",
            "SEARCHES": "2",
            "CLICKS": "0",
            "CTR": "0%",
            "TREND": "▁" * 29 + "█",
        },
    ]

    header, *rows = table(out, "Searches with no results")
    assert header.split() == ["QUERY", "SEARCHES", "TREND"]
    assert [cells(header, r) for r in rows] == [
        {"QUERY": "gift card", "SEARCHES": "2", "TREND": "▁" * 29 + "█"}
    ]

    header, *rows = table(out, "Least helpful answers")
    assert header.split() == [
        "QUESTION",
        "VIEWS",
        "HELPFUL",
        "UNHELPFUL",
        "SHARE",
        "REASON",
        "TREND",
    ]
    [row] = [cells(header, r) for r in rows]
    assert row["QUESTION"] == reset["slug"]
    assert (row["HELPFUL"], row["UNHELPFUL"], row["SHARE"]) == ("1", "2", "33%")
    assert row["REASON"] == "Too short (2)"
    assert row["TREND"] == "▁" * 29 + "█" and set(row["TREND"]) <= set(BARS)

    # Issue 39: these searches carry no audience (the help center's anonymous readers).
    header, *rows = table(out, "Readers by audience")
    assert header.split() == ["AUDIENCE", "SEARCHES", "NO", "RESULTS", "VIEWS"]
    assert [r.split() for r in rows] == [["(no", "audience)", "6", "2", "0"]]


async def test_analytics_of_an_org_without_data_and_of_no_org(org: OrgClient) -> None:
    run = await asyncio.to_thread(faq, "analytics", org.slug)
    assert run.returncode == 0, run.stderr
    titles = ("Top searches", "Searches with no results", "Least helpful answers")
    for title in (*titles, "Readers by audience"):
        assert table(run.stdout, title)[-1] == "(none)"
    missing: Any = await asyncio.to_thread(faq, "analytics", "no-such-org-anywhere")
    assert missing.returncode == 1
    assert "no org" in missing.stderr
