"""``analytics-collect``: content analytics recorded in Redis (``api.analytics.recording``)
moved into each org's ``search_events`` and the org's daily aggregates recomputed (issue 17);
``purge_analytics``, the retention of raw events and aggregates, runs in ``purge-history``.

Every ``PERIOD_SECONDS``, for each org with searches or votes (``recording.orgs_key``) or page
views (``visitors.view_orgs_key``) today or yesterday:
- the org's recorded clicks are read, then its searches are drained (``BATCH`` per
  statement), inserted ``ON CONFLICT (id) DO NOTHING`` (an id is made when a search is
  recorded: a batch read twice is written once) and trimmed from Redis after the commit; then
  each click fills its search's ``clicked_question_id`` only while it is NULL (the first open
  wins, a replay changes nothing). Clicks are read before the searches are drained, so every
  click read has its search in the database by then. One collector per org at a time (a Redis
  lock): two never trim the same items.
- the org's audience views of yesterday and today are counted
  (``api.analytics.by_audience.collect_views``, issue 39), then
  ``api.analytics.aggregation.aggregate_recent`` recomputes the org's daily aggregates.
Retention (``purge_analytics``, once a day for every org in ``purge-history``):
``search_events`` and ``question_votes`` older than ``RAW_DAYS``; ``search_daily``,
``question_feedback_daily``, ``question_views_daily`` and the per-audience aggregates older
than ``AGGREGATE_DAYS``, in
batches of ``RETENTION_BATCH`` rows a transaction.
``analytics-gaps`` (issue 38, checked hourly): once per ISO week, each org with an active
webhook subscribed to ``analytics.gaps`` gets that event, the content gaps and suggested
synonyms of the last 7 full days (``api.analytics.gaps``), through its outbox.

An org that fails is logged and the others still run; the actor then raises so Dramatiq
retries.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import orjson
import structlog
from sqlalchemy import bindparam, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine
from ulid import ULID

from api.analytics import by_audience, gaps
from api.analytics.aggregation import aggregate_recent
from api.analytics.recording import clicks_key, orgs_key, search_events, searches_key
from api.analytics.service import Window
from api.helpcenter.visitors import view_orgs_key
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register
from tasks.org_failures import each_org
from tasks.registry import actor
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.outbox import record_event
from tenancy.redis import loop_client
from tenancy.transactions import commit

__all__ = ["collect", "purge_analytics", "searches_key", "send_gaps"]

log = structlog.get_logger(__name__)
PERIOD_SECONDS = 60.0
BATCH = 1_000  # searches per statement
MAX_CLICKS = 50_000  # clicks read per run (more wait for the next one)
LOCK_SECONDS = 300
RAW_DAYS = 90
AGGREGATE_DAYS = 2 * 365
RETENTION_BATCH = 5_000
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# (table, the column that ages, what a batch selects by): raw first, then aggregates.
_RAW = (("search_events", "at", "id"), ("question_votes", "created_at", "ctid"))
_AGGREGATES = (
    ("search_daily", "day", "ctid"),
    ("question_feedback_daily", "day", "ctid"),
    ("question_views_daily", "day", "ctid"),
    ("search_audience_daily", "day", "ctid"),
    ("question_audience_views_daily", "day", "ctid"),
)


class CollectIncomplete(Exception):
    pass


def _lock_key(org_id: str) -> str:
    return f"faq:an:collect:{org_id}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _active_orgs(today: date) -> set[str]:
    client = loop_client()
    keys = [k(day) for day in (today - timedelta(days=1), today) for k in (orgs_key, view_orgs_key)]
    members: set[Any] = await client.sunion(keys)  # type: ignore[misc]
    return {_text(m) for m in members}


async def _schemas(engine: AsyncEngine, org_ids: set[str] | None) -> dict[str, str]:
    stmt = select(Organization.id, Organization.schema_name).order_by(Organization.id)
    if org_ids is not None:
        stmt = stmt.where(Organization.id.in_(sorted(org_ids)))
    async with shared_session(engine) as session:
        return {row.id: row.schema_name for row in await session.execute(stmt)}


def _row(item: Any) -> dict[str, Any]:
    event = orjson.loads(item)
    return {
        "id": event["id"],
        "at": datetime.fromtimestamp(float(event["at"]), UTC),
        "source": event["source"],
        "locale": event["locale"],
        "query": event["query"][:200],
        "results": int(event["results"]),
        "visitor": event["visitor"],
        "audiences": [str(a)[:100] for a in event.get("audiences", [])],
    }


async def collect_org(engine: AsyncEngine, org_id: str, schema: str, today: date) -> dict[str, int]:
    """One org: its searches and clicks into ``search_events``, then its aggregates."""
    client = loop_client()
    token = str(ULID())
    if not await client.set(_lock_key(org_id), token, nx=True, ex=LOCK_SECONDS):
        return {"searches": 0, "clicks": 0}  # another collector has this org now
    try:
        clicks = [
            _text(c).split(" ", 1)
            for c in await client.lrange(clicks_key(org_id), 0, MAX_CLICKS - 1)
        ]  # type: ignore[misc]
        searches = 0
        while True:
            batch = await client.lrange(searches_key(org_id), 0, BATCH - 1)  # type: ignore[misc]
            if not batch:
                break
            rows = [_row(item) for item in batch]
            async with tenant_session(engine, schema) as session:
                stmt = (
                    insert(search_events)
                    .values(rows)
                    .on_conflict_do_nothing(index_elements=[search_events.c.id])
                )
                await session.execute(stmt)
                await commit(session)
            await client.ltrim(searches_key(org_id), len(batch), -1)  # type: ignore[misc]
            searches += len(batch)
            if len(batch) < BATCH:
                break
        if clicks:
            async with tenant_session(engine, schema) as session:
                click = (
                    update(search_events)
                    .where(
                        search_events.c.id == bindparam("search_id"),
                        search_events.c.clicked_question_id.is_(None),
                    )
                    .values(clicked_question_id=bindparam("question_id"))
                )
                params = [{"search_id": s, "question_id": q} for s, q in clicks]
                await session.execute(click, params)
                await commit(session)
            await client.ltrim(clicks_key(org_id), len(clicks), -1)  # type: ignore[misc]
        async with tenant_session(engine, schema) as session:
            for day in (today - timedelta(days=1), today):
                await by_audience.collect_views(session, client, org_id, day)
            await aggregate_recent(session, today)
            await commit(session)
    finally:
        await client.eval(_RELEASE, 1, _lock_key(org_id), token)  # type: ignore[misc]
    return {"searches": searches, "clicks": len(clicks)}


async def _delete_older(
    engine: AsyncEngine, schema: str, table: str, column: str, by: str, before: Any
) -> int:
    """Delete ``table``'s rows with ``column < before``, ``RETENTION_BATCH`` a transaction."""
    stmt = text(
        f"DELETE FROM {table} WHERE {by} IN "  # the names are constants of this module
        f"(SELECT {by} FROM {table} WHERE {column} < :before LIMIT :batch)"
    )
    total = 0
    while True:
        async with tenant_session(engine, schema) as session:
            result = await session.execute(stmt, {"before": before, "batch": RETENTION_BATCH})
            await commit(session)
        removed = int(getattr(result, "rowcount", 0) or 0)
        total += removed
        if removed < RETENTION_BATCH:
            return total


async def purge_analytics(engine: AsyncEngine, schema: str, today: date) -> dict[str, int]:
    """One org's retention (``purge-history`` runs it for every org, once a day): raw events
    older than ``RAW_DAYS``, daily aggregates older than ``AGGREGATE_DAYS``."""
    raw_before = datetime.combine(today, time.min, UTC) - timedelta(days=RAW_DAYS)
    aggregates_before = today - timedelta(days=AGGREGATE_DAYS)
    removed = {"analyticsRaw": 0, "analyticsAggregates": 0}
    for table, column, by in _RAW:
        removed["analyticsRaw"] += await _delete_older(
            engine, schema, table, column, by, raw_before
        )
    for table, column, by in _AGGREGATES:
        removed["analyticsAggregates"] += await _delete_older(
            engine, schema, table, column, by, aggregates_before
        )
    return removed


async def collect(engine: AsyncEngine | None = None, today: date | None = None) -> dict[str, Any]:
    engine = engine or worker_engine()
    today = today or datetime.now(UTC).date()
    schemas = await _schemas(engine, await _active_orgs(today))

    async def work(org_id: str) -> dict[str, int]:
        return await collect_org(engine, org_id, schemas[org_id], today)

    done, failed = await each_org("analytics-collect", schemas, work)
    totals: dict[str, Any] = {
        "orgs": len(schemas),
        "searches": sum(d["searches"] for d in done),
        "clicks": sum(d["clicks"] for d in done),
        "failed": failed,
    }
    log.info("analytics_collect", **totals)
    return totals


@actor("analytics.collect", max_retries=3, time_limit=600_000)
async def collect_actor() -> None:
    totals = await collect()
    if totals["failed"]:
        raise CollectIncomplete(f"{totals['failed']} org(s) failed; retrying")


register(
    PeriodicJob(
        name="analytics-collect",
        run=collect,
        actor_name="analytics.collect",
        period_seconds=lambda: PERIOD_SECONDS,
    )
)


# ---- analytics-gaps: the weekly ``analytics.gaps`` webhook event (issue 38) ----------------

GAPS_EVENT = "analytics.gaps"
GAPS_CHECK_SECONDS = 3_600.0  # checked hourly; each org gets one event per ISO week
GAPS_DAYS = 7
GAPS_SENT_TTL_SECONDS = 9 * 86_400
GAPS_UNSUBSCRIBED_RECHECK_SECONDS = 86_400
_SUBSCRIBED = text(
    "SELECT EXISTS (SELECT 1 FROM webhooks WHERE deleted_at IS NULL AND active"
    " AND :event = ANY(events)) AS subscribed"
)


def gaps_sent_key(org_id: str, today: date) -> str:
    year, week, _ = today.isocalendar()
    return f"faq:an:gaps-sent:{org_id}:{year}-W{week:02d}"


async def send_org_gaps(engine: AsyncEngine, org_id: str, schema: str, today: date) -> bool:
    """One org: unless sent this ISO week or no active webhook subscribes to it, the
    ``analytics.gaps`` event of the last ``GAPS_DAYS`` full days (UTC), written to the org's
    outbox (the relay delivers it); the week is marked after the commit. An org without a
    subscriber is looked at again a day later (a webhook subscribed meanwhile gets the
    week's event then)."""
    client = loop_client()
    key = gaps_sent_key(org_id, today)
    if await client.exists(key):
        return False
    span = Window(today - timedelta(days=GAPS_DAYS), today - timedelta(days=1))
    async with tenant_session(engine, schema) as session:
        subscribed = (await session.execute(_SUBSCRIBED, {"event": GAPS_EVENT})).scalar()
        if not subscribed:
            await session.rollback()
            # Looked at again in a day, not every hour (most orgs never subscribe).
            await client.set(key, "0", ex=GAPS_UNSUBSCRIBED_RECHECK_SECONDS)
            return False
        report = await gaps.gaps_report(session, span, locale=None)
        await record_event(session, org_id, GAPS_EVENT, report)
        await commit(session)
    await client.set(key, "1", ex=GAPS_SENT_TTL_SECONDS)
    return True


async def send_gaps(engine: AsyncEngine | None = None, today: date | None = None) -> dict[str, Any]:
    """``analytics-gaps``: the weekly ``analytics.gaps`` event of every org that subscribes."""
    engine = engine or worker_engine()
    today = today or datetime.now(UTC).date()
    schemas = await _schemas(engine, None)

    async def work(org_id: str) -> bool:
        return await send_org_gaps(engine, org_id, schemas[org_id], today)

    done, failed = await each_org("analytics-gaps", schemas, work)
    totals: dict[str, Any] = {"orgs": len(schemas), "sent": sum(done), "failed": failed}
    log.info("analytics_gaps", **totals)
    return totals


@actor("analytics.send_gaps", max_retries=3, time_limit=3_600_000)
async def send_gaps_actor() -> None:
    totals = await send_gaps()
    if totals["failed"]:
        raise CollectIncomplete(f"{totals['failed']} org(s) failed; retrying")


register(
    PeriodicJob(
        name="analytics-gaps",
        run=send_gaps,
        actor_name="analytics.send_gaps",
        period_seconds=lambda: GAPS_CHECK_SECONDS,
    )
)
