"""The ``analytics-collect`` job (issue 17): moves recorded searches and clicks from Redis into
each org's ``search_events`` (idempotent); the retention of the raw events (90 days) and of the
daily aggregates (2 years), which the daily ``purge-history`` job applies."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.analytics.recording import recorder_for, search_events
from api.helpcenter.visitors import question_views_daily, question_votes
from tasks import analytics
from tasks.analytics import collect
from tasks.jobs import JOBS
from tasks.purge import purge_history
from tenancy.db import tenant_session
from tenancy.redis import loop_client
from tenancy.transactions import commit
from tests.api.analytics.test_recording import hc_open, hc_search, reader
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow


@pytest.fixture
async def parcel(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "Where is my parcel?", "On its way to you.")


async def rows(engine: AsyncEngine, org: OrgClient) -> list[tuple[Any, ...]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        result = await session.execute(select(search_events).order_by(search_events.c.id))
        return [tuple(r) for r in result]


def test_the_job_is_registered() -> None:
    job = JOBS["analytics-collect"]
    assert job.actor_name == "analytics.collect" and job.period_seconds() == 60


async def test_collecting_twice_writes_nothing_twice(
    app: Quart, engine: AsyncEngine, org: OrgClient, parcel: dict[str, Any]
) -> None:
    client = reader(app)
    await hc_search(client, org, "parcel")
    await hc_open(client, org, parcel["slug"])
    await hc_search(client, org, "nothing")
    await recorder_for(app.extensions).flush()
    # What a collect that died before trimming Redis leaves: the same items read again.
    key = analytics.searches_key(org.info.id)
    items = await loop_client().lrange(key, 0, -1)  # type: ignore[misc]
    assert len(items) == 2
    await collect(engine)
    first = await rows(engine, org)
    await loop_client().rpush(key, *items)  # type: ignore[misc]
    await collect(engine)
    await collect(engine)
    assert await rows(engine, org) == first
    assert len(first) == 2
    assert sorted(r[7] or "" for r in first) == ["", parcel["id"]]


async def insert_aged(engine: AsyncEngine, org: OrgClient, question_id: str) -> date:
    now = datetime.now(UTC)
    today = now.date()
    async with tenant_session(engine, org.info.schema_name) as session:
        for name, days in (("old", 91), ("young", 89)):
            await session.execute(
                insert(search_events).values(
                    id=f"se_{name}",
                    at=now - timedelta(days=days),
                    source="api",
                    locale="en",
                    query=name,
                    results=1,
                    visitor="v",
                )
            )
            await session.execute(
                insert(question_votes).values(
                    question_id=question_id,
                    visitor=f"visitor-{name}",
                    helpful=True,
                    locale="en",
                    created_at=now - timedelta(days=days),
                )
            )
        for days in (2 * 366, 2 * 365 - 2):
            day = today - timedelta(days=days)
            await session.execute(
                insert(question_views_daily).values(question_id=question_id, day=day, views=3)
            )
            await session.execute(
                text(
                    "INSERT INTO search_daily (day, locale, query, searches, clicks, no_results)"
                    " VALUES (:day, 'en', 'q', 1, 0, 0)"
                ),
                {"day": day},
            )
            await session.execute(
                text(
                    "INSERT INTO question_feedback_daily (question_id, day, helpful, unhelpful)"
                    " VALUES (:q, :day, 1, 0)"
                ),
                {"q": question_id, "day": day},
            )
        await commit(session)
    return today


async def test_retention_deletes_old_raw_rows_and_old_aggregates_only(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    parcel: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(analytics, "RETENTION_BATCH", 1)  # several batches
    today = await insert_aged(engine, org, parcel["id"])
    # The daily purge-history job applies it, for every org.
    totals = await purge_history(engine)
    assert totals["analyticsRaw"] >= 2 and totals["analyticsAggregates"] >= 3
    async with tenant_session(engine, org.info.schema_name) as session:
        queries = (await session.execute(select(search_events.c.query))).scalars().all()
        voters = (await session.execute(select(question_votes.c.visitor))).scalars().all()
        counts = {}
        for table in ("question_views_daily", "search_daily", "question_feedback_daily"):
            result = await session.execute(text(f"SELECT min(day), count(*) FROM {table}"))
            counts[table] = tuple(result.one())
    assert queries == ["young"] and voters == ["visitor-young"]
    young_day = today - timedelta(days=2 * 365 - 2)
    assert counts == {
        "question_views_daily": (young_day, 1),
        "search_daily": (young_day, 1),
        "question_feedback_daily": (young_day, 1),
    }
