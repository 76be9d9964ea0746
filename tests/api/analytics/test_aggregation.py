"""``aggregate_recent`` (issue 17): the daily aggregates of the days whose raw rows are kept
(the last 90, today included) recomputed from the raw rows: searches into ``search_daily``,
help-center votes into ``question_feedback_daily``; idempotent, a replaced vote moves days,
older days never touched."""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from ulid import ULID

from api.analytics.aggregation import RAW_DAYS, aggregate_recent
from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def today() -> date:
    return datetime.now(UTC).date()


def noon(day: date) -> datetime:
    return datetime.combine(day, time(12), UTC)


_addresses = itertools.count(1)


@dataclass
class Reader:
    """A help-center reader: a browser (its cookie) at an address of its own (votes are
    rate limited per address)."""

    client: Any
    address: str = field(default_factory=lambda: new_address())


def new_address() -> str:
    n = next(_addresses)
    return f"10.{os.getpid() % 250}.{n // 250 % 250}.{n % 250 + 1}"


async def cast_vote(
    app: Quart, org: OrgClient, slug: str, helpful: bool, reason: str = ""
) -> Reader:
    """A reader opens the question page and answers "Was this helpful?" (returns the reader:
    the same one may vote again)."""
    reader = Reader(app.test_client())
    await vote_again(reader, org, slug, helpful, reason)
    return reader


async def vote_again(
    reader: Reader, org: OrgClient, slug: str, helpful: bool, reason: str = ""
) -> None:
    url = f"/hc/{org.slug}/en/questions/{slug}"
    scope = {"client": (reader.address, 40000)}
    r = await reader.client.get(url, scope_base=scope)
    assert r.status_code == 200
    found = TOKEN.search(await r.get_data(as_text=True))
    assert found is not None
    form = {"helpful": "yes" if helpful else "no", "reason": reason, "csrf_token": found.group(1)}
    r = await reader.client.post(f"{url}/feedback", form=form, scope_base=scope)
    assert r.status_code == 303


async def add_searches(
    engine: AsyncEngine, org: OrgClient, *rows: tuple[datetime, str, str, int, str | None]
) -> None:
    """Raw searches as the recording writes them: (at, locale, query, results, clicked)."""
    async with tenant_session(engine, org.info.schema_name) as session:
        for at, locale, query, results, clicked in rows:
            await session.execute(
                text(
                    "INSERT INTO search_events (id, at, source, locale, query, results, visitor,"
                    " clicked_question_id) VALUES (:id, :at, 'help_center', :locale, :query,"
                    " :results, :visitor, :clicked)"
                ),
                {
                    "id": f"sev_{ULID()}",
                    "at": at,
                    "locale": locale,
                    "query": query,
                    "results": results,
                    "visitor": "v" * 64,
                    "clicked": clicked,
                },
            )
        await commit(session)


async def sql(engine: AsyncEngine, org: OrgClient, statement: str, **params: Any) -> None:
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(text(statement), params)
        await commit(session)


async def aggregate(engine: AsyncEngine, org: OrgClient, day: date | None = None) -> int:
    async with tenant_session(engine, org.info.schema_name) as session:
        written = await aggregate_recent(session, day or today())
        await commit(session)
    return written


async def search_rows(
    engine: AsyncEngine, org: OrgClient
) -> dict[tuple[date, str, str], tuple[int, int, int]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(text("SELECT * FROM search_daily"))
        return {(r.day, r.locale, r.query): (r.searches, r.clicks, r.no_results) for r in rows}


async def feedback_rows(
    engine: AsyncEngine, org: OrgClient
) -> dict[tuple[str, date], tuple[int, int, dict[str, int]]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(text("SELECT * FROM question_feedback_daily"))
        return {(r.question_id, r.day): (r.helpful, r.unhelpful, r.reasons) for r in rows}


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "How do I reset my password?", "Use the reset link.")


async def test_searches_are_counted_per_day_locale_and_query(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    d0, d1 = today(), today() - timedelta(days=1)
    await add_searches(
        engine,
        org,
        (noon(d0), "en", "reset password", 3, "q_1"),
        (noon(d0), "en", "reset password", 3, None),
        (noon(d0), "en", "reset password", 0, None),
        (noon(d0), "de", "reset password", 2, "q_1"),
        (noon(d1), "en", "refund", 0, None),
        (datetime.combine(d1, time(23, 59, 59), UTC), "en", "refund", 0, None),
    )
    await add_searches(engine, other_org, (noon(d0), "en", "reset password", 1, None))
    # Three rows of search_daily, and the same three of search_audience_daily (no audience).
    assert await aggregate(engine, org) == 6
    assert await search_rows(engine, org) == {
        (d0, "en", "reset password"): (3, 1, 1),
        (d0, "de", "reset password"): (1, 1, 0),
        (d1, "en", "refund"): (2, 0, 2),
    }
    assert await search_rows(engine, other_org) == {}  # only the bound org


async def test_votes_are_counted_per_question_and_day_with_the_top_reasons(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    other = await question(org, "Where is my parcel?", "On its way.")
    slug = published["slug"]
    await cast_vote(app, org, slug, True)
    await cast_vote(app, org, slug, True, "ignored on yes")
    await cast_vote(app, org, slug, False, "Too short")
    await cast_vote(app, org, slug, False, "Too short")
    await cast_vote(app, org, slug, False, "Outdated")
    await cast_vote(app, org, slug, False)  # no reason
    await cast_vote(app, org, other["slug"], False, "Wrong")
    assert await aggregate(engine, org) == 2
    assert await feedback_rows(engine, org) == {
        (published["id"], today()): (2, 4, {"Too short": 2, "Outdated": 1}),
        (other["id"], today()): (0, 1, {"Wrong": 1}),
    }


async def test_at_most_twenty_reasons_are_kept_by_count(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    await cast_vote(app, org, published["slug"], False, "Most common")
    # 22 more readers, each with a reason of their own, two with the most common one.
    for n in range(21):
        await cast_vote(app, org, published["slug"], False, f"reason {n:02d}")
    await cast_vote(app, org, published["slug"], False, "Most common")
    await aggregate(engine, org)
    [(helpful, unhelpful, reasons)] = (await feedback_rows(engine, org)).values()
    assert (helpful, unhelpful) == (0, 23)
    assert len(reasons) == 20
    assert reasons["Most common"] == 2
    # Ties at one vote are kept in the reasons' order.
    assert sorted(k for k in reasons if k != "Most common") == [
        f"reason {n:02d}" for n in range(19)
    ]


async def test_running_twice_changes_nothing(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    await cast_vote(app, org, published["slug"], False, "Unclear")
    await add_searches(engine, org, (noon(today()), "en", "password", 0, None))
    assert await aggregate(engine, org) == 3  # a vote, a search, the search's audience row
    searches, feedback = await search_rows(engine, org), await feedback_rows(engine, org)
    assert await aggregate(engine, org) == 0  # no row written
    assert (await search_rows(engine, org), await feedback_rows(engine, org)) == (
        searches,
        feedback,
    )
    # New raw rows are added to the day's counts, not on top of them.
    await cast_vote(app, org, published["slug"], True)
    await add_searches(engine, org, (noon(today()), "en", "password", 1, "q_x"))
    assert await aggregate(engine, org) == 3
    assert (await search_rows(engine, org))[(today(), "en", "password")] == (2, 1, 1)
    assert (await feedback_rows(engine, org))[(published["id"], today())] == (
        1,
        1,
        {"Unclear": 1},
    )


async def test_a_replaced_vote_moves_to_the_day_of_the_new_vote(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader = await cast_vote(app, org, published["slug"], False, "Unclear")
    three_days_ago = today() - timedelta(days=3)
    # The vote was cast three days ago.
    await sql(engine, org, "UPDATE question_votes SET created_at = :at", at=noon(three_days_ago))
    await aggregate(engine, org)
    assert await feedback_rows(engine, org) == {
        (published["id"], three_days_ago): (0, 1, {"Unclear": 1})
    }
    await vote_again(reader, org, published["slug"], True)  # the reader changes their mind
    await aggregate(engine, org)
    # The old day lost its only vote: its row is gone, not left at zero.
    assert await feedback_rows(engine, org) == {(published["id"], today()): (1, 0, {})}


async def test_days_older_than_the_raw_window_are_never_touched(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    old = today() - timedelta(days=RAW_DAYS)  # the first day no longer kept whole
    older = today() - timedelta(days=400)
    first_kept = today() - timedelta(days=RAW_DAYS - 1)
    # Aggregates of days whose raw rows are purged (kept two years).
    await sql(
        engine,
        org,
        "INSERT INTO search_daily VALUES (:d1, 'en', 'old', 7, 1, 2), (:d2, 'en', 'old', 5, 0, 5)",
        d1=old,
        d2=older,
    )
    await sql(
        engine,
        org,
        "INSERT INTO question_feedback_daily VALUES (:q, :d, 4, 3, '{\"Slow\": 3}')",
        q=published["id"],
        d=old,
    )
    # A raw search left of the day before the window, and one on its first day.
    await add_searches(
        engine,
        org,
        (noon(old), "en", "old", 0, None),
        (datetime.combine(first_kept, time.min, UTC), "en", "kept", 0, None),
    )
    assert await aggregate(engine, org) == 2  # "kept": its search_daily and audience rows
    assert await search_rows(engine, org) == {
        (old, "en", "old"): (7, 1, 2),
        (older, "en", "old"): (5, 0, 5),
        (first_kept, "en", "kept"): (1, 0, 1),
    }
    assert await feedback_rows(engine, org) == {(published["id"], old): (4, 3, {"Slow": 3})}
