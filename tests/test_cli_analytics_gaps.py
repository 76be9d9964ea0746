"""``faq analytics gaps SLUG`` (issue 38), run as ops run it: the content gaps and suggested
synonyms of the last 30 days as two tables (``GET /analytics/gaps``'s figures)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.analytics.gaps_helpers import add_reader_searches, an_hour_ago, readers_searches
from tests.fixtures.orgs import OrgClient
from tests.test_cli import faq
from tests.test_cli_analytics import cells, table

pytestmark = pytest.mark.slow


async def test_gaps_prints_content_gaps_and_suggestions(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await add_reader_searches(engine, org, an_hour_ago(), *readers_searches("q_X"))
    await add_reader_searches(engine, other_org, an_hour_ago(), (0, "x", "not mine", 0, None))
    r = await org.get("/analytics/gaps", scope="read")
    (suggestion,) = (await r.get_json())["data"]["suggestedSynonyms"]

    run = await asyncio.to_thread(faq, "analytics", "gaps", org.slug)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith(f"Gaps of {org.slug}: ")
    assert "not mine" not in out
    header, *rows = table(out, "Content gaps (searches that found nothing)")
    assert header.split() == ["QUERY", "LOCALE", "SEARCHES", "QUERIES", "EXAMPLES"]
    assert [cells(header, row) for row in rows] == [
        {
            "QUERY": "gift card",
            "LOCALE": "en",
            "SEARCHES": "3",
            "QUERIES": "3",
            "EXAMPLES": "gift cards; buy a gift card",
        },
        {"QUERY": "sso", "LOCALE": "en", "SEARCHES": "2", "QUERIES": "1", "EXAMPLES": "-"},
    ]
    header, *rows = table(
        out, "Suggested synonyms (accept: POST /analytics/gaps/suggestions/ID/accept)"
    )
    assert [cells(header, row) for row in rows] == [
        {
            "ID": suggestion["id"],
            "LOCALE": "en",
            "MEMBERS": "swap seats = transfer license",
            "SEARCHES": "2",
        }
    ]

    # The org report is unchanged; an unknown org or report is an error.
    assert (await asyncio.to_thread(faq, "analytics", org.slug)).returncode == 0
    missing = await asyncio.to_thread(faq, "analytics", "gaps", "no-such-org")
    assert missing.returncode == 1 and "no org 'no-such-org'" in missing.stderr
    unknown = await asyncio.to_thread(faq, "analytics", "holes", org.slug)
    assert unknown.returncode == 2 and "unknown report 'holes'" in unknown.stderr
