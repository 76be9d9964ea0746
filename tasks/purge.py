"""The daily purge: questions soft-deleted more than 30 days ago, and expired idempotency keys.

It visits every org schema (a daily job; one short transaction per org). An org that fails is
logged and the others still run; the actor then raises so Dramatiq retries (it is idempotent).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.questions.sweep import purge_expired
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register
from tasks.registry import actor
from tenancy.clock import utcnow
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.transactions import commit

log = structlog.get_logger(__name__)
RETENTION = timedelta(days=30)
DAY_SECONDS = 86_400.0


class PurgeIncomplete(Exception):
    pass


async def purge_deleted(engine: AsyncEngine | None = None) -> dict[str, Any]:
    engine = engine or worker_engine()
    async with shared_session(engine) as session:
        orgs = (
            await session.execute(
                select(Organization.id, Organization.schema_name).order_by(Organization.id)
            )
        ).all()
    cutoff = utcnow() - RETENTION
    totals = {"orgs": len(orgs), "questions": 0, "idempotencyKeys": 0, "failed": 0}
    for org in orgs:
        try:
            async with tenant_session(engine, org.schema_name) as session:
                counts = await purge_expired(session, cutoff)
                await commit(session)
        except Exception:
            log.warning("purge_failed", org_id=org.id, exc_info=True)
            totals["failed"] += 1
            continue
        totals["questions"] += counts["questions"]
        totals["idempotencyKeys"] += counts["idempotencyKeys"]
    log.info("purge_deleted", **totals)
    return totals


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
