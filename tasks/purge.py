"""The daily purges, each visiting every org schema; an org that fails is logged and the
others still run; the actor then raises so Dramatiq retries (both are idempotent).

- ``purge-deleted``: questions soft-deleted more than 30 days ago, and expired idempotency
  keys (one short transaction per org).
- ``purge-history``: deliveries older than ``FAQ_DELIVERY_RETENTION_DAYS`` (30), webhooks
  deleted that long ago once their deliveries are gone, and audit entries older than
  ``FAQ_AUDIT_RETENTION_DAYS`` (365) past each org's newest 100, and the entries of the org's
  audit log (``audit_entries``) older than that too (``orgAuditEntries``), and content
  analytics past their retention (``tasks.analytics.purge_analytics``); in batches, one short
  transaction per batch, so no lock is held for long.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.audit.service import purge_entries_batch
from api.questions.sweep import purge_expired
from api.webhooks.service import purge_deleted_webhooks_batch, purge_history_batch
from tasks.analytics import purge_analytics
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register
from tasks.org_failures import each_org
from tasks.registry import actor
from tenancy.audit import purge_audit_batch
from tenancy.clock import utcnow
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.settings import get_settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)
RETENTION = timedelta(days=30)
DAY_SECONDS = 86_400.0
BATCH_ROWS = 1_000


class PurgeIncomplete(Exception):
    pass


async def _schemas(engine: AsyncEngine) -> dict[str, str]:
    """Every org's schema, by org id."""
    async with shared_session(engine) as session:
        rows = await session.execute(
            select(Organization.id, Organization.schema_name).order_by(Organization.id)
        )
        return {row.id: row.schema_name for row in rows}


async def purge_deleted(engine: AsyncEngine | None = None) -> dict[str, Any]:
    engine = engine or worker_engine()
    schemas = await _schemas(engine)
    cutoff = utcnow() - RETENTION

    async def purge_org(org_id: str) -> dict[str, int]:
        async with tenant_session(engine, schemas[org_id]) as session:
            counts = await purge_expired(session, cutoff)
            await commit(session)
        return counts

    done, failed = await each_org("purge-deleted", schemas, purge_org)
    totals = _totals(len(schemas), ("questions", "idempotencyKeys"), done, failed)
    log.info("purge_deleted", **totals)
    return totals


def _totals(
    orgs: int, keys: tuple[str, ...], done: list[dict[str, int]], failed: int
) -> dict[str, int]:
    return {"orgs": orgs, **{k: sum(c[k] for c in done) for k in keys}, "failed": failed}


Batch = Callable[[Any, datetime, int], Awaitable[int]]


async def _in_batches(engine: AsyncEngine, schema: str, batch: Batch, cutoff: datetime) -> int:
    """Run ``batch`` until it removes fewer than ``BATCH_ROWS``: one transaction per batch."""
    total = 0
    while True:
        async with tenant_session(engine, schema) as session:
            removed = await batch(session, cutoff, BATCH_ROWS)
            await commit(session)
        total += removed
        if removed < BATCH_ROWS:
            return total


async def purge_history(engine: AsyncEngine | None = None) -> dict[str, Any]:
    engine = engine or worker_engine()
    settings = get_settings()
    now = utcnow()
    deliveries_before = now - timedelta(days=settings.faq_delivery_retention_days)
    audit_before = now - timedelta(days=settings.faq_audit_retention_days)
    schemas = await _schemas(engine)

    async def purge_org(org_id: str) -> dict[str, int]:
        schema = schemas[org_id]
        return {
            "deliveries": await _in_batches(engine, schema, purge_history_batch, deliveries_before),
            "webhooks": await _in_batches(
                engine, schema, purge_deleted_webhooks_batch, deliveries_before
            ),
            "auditEntries": await _in_batches(engine, schema, purge_audit_batch, audit_before),
            "orgAuditEntries": await _in_batches(engine, schema, purge_entries_batch, audit_before),
            # Content analytics: raw events 90 days, daily aggregates two years.
            **await purge_analytics(engine, schema, now.date()),
        }

    done, failed = await each_org("purge-history", schemas, purge_org)
    kinds = (
        "deliveries",
        "webhooks",
        "auditEntries",
        "orgAuditEntries",
        "analyticsRaw",
        "analyticsAggregates",
    )
    totals = _totals(len(schemas), kinds, done, failed)
    log.info("purge_history", **totals)
    return totals


@actor("history.purge", max_retries=3, time_limit=3_600_000)
async def purge_history_actor() -> None:
    totals = await purge_history()
    if totals["failed"]:
        raise PurgeIncomplete(f"{totals['failed']} org(s) failed; retrying")


@actor("questions.purge_deleted", max_retries=3, time_limit=3_600_000)
async def purge_deleted_actor() -> None:
    totals = await purge_deleted()
    if totals["failed"]:
        raise PurgeIncomplete(f"{totals['failed']} org(s) failed; retrying")


register(
    PeriodicJob(
        name="purge-deleted",
        run=purge_deleted,
        actor_name="questions.purge_deleted",
        period_seconds=lambda: DAY_SECONDS,
    )
)
register(
    PeriodicJob(
        name="purge-history",
        run=purge_history,
        actor_name="history.purge",
        period_seconds=lambda: DAY_SECONDS,
    )
)
