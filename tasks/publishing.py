"""The publish sweep: ``questions.publish_due`` publishes every due scheduled question.

Its cost grows with the number of orgs that have something due, not with the number of orgs:
``shared.publish_schedule`` holds each org's earliest scheduled time (kept at most the real one
by every write that schedules), so one indexed query finds the due orgs, and an org with
nothing due is never visited. Each due org is one transaction on its own schema, holding its
schedule row (``FOR UPDATE SKIP LOCKED``): two sweeps at once split the orgs between them,
and the question rows are locked the same way, so each question is published once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.questions.models import PublishSchedule
from api.questions.sweep import publish_due
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register
from tasks.org_failures import org_failed
from tasks.registry import actor
from tenancy.audit import SYSTEM_SCHEDULER
from tenancy.clock import utcnow
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.settings import get_settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)
# Due orgs are worked a few at a time; each holds one connection.
CONCURRENCY = 4


class SweepIncomplete(Exception):
    pass


async def _publish_org(engine: AsyncEngine, org_id: str, schema: str) -> int:
    async with tenant_session(engine, schema) as session:
        held = (
            await session.execute(
                select(PublishSchedule.org_id)
                .where(PublishSchedule.org_id == org_id, PublishSchedule.next_due_at <= utcnow())
                .with_for_update(skip_locked=True)
            )
        ).first()
        if held is None:
            return 0  # another sweep holds it, or it is no longer due
        published = await publish_due(session, org_id, SYSTEM_SCHEDULER)
        await commit(session)
        return published


async def publish_due_questions(engine: AsyncEngine | None = None) -> dict[str, Any]:
    """Publish every due scheduled question of every org; returns what it did."""
    engine = engine or worker_engine()
    async with shared_session(engine) as session:
        due = (
            await session.execute(
                select(PublishSchedule.org_id, Organization.schema_name)
                .join(Organization, Organization.id == PublishSchedule.org_id)
                .where(PublishSchedule.next_due_at <= utcnow())
                .order_by(PublishSchedule.next_due_at)
            )
        ).all()
    if not due:
        return {"orgs": 0, "published": 0}
    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(org_id: str, schema: str) -> int:
        async with limit:
            return await _publish_org(engine, org_id, schema)

    outcomes = await asyncio.gather(
        *(one(row.org_id, row.schema_name) for row in due), return_exceptions=True
    )
    failed = 0
    for row, outcome in zip(due, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            failed += 1
            org_failed("publish-sweep", row.org_id, outcome)
    published = sum(o for o in outcomes if isinstance(o, int))
    result = {"orgs": len(due), "published": published, "failed": failed}
    log.info("publish_sweep", **result)
    if failed:
        # The other orgs' work is committed; raising makes Dramatiq retry the failed ones.
        raise SweepIncomplete(f"{failed} org(s) failed")
    return result


# Its own queue: a scheduled question is published within one period even while the default
# queue holds a backlog (a burst of relays, of deliveries): a worker pulls from each
# queue it serves, so the sweep never waits behind that backlog, only for a free thread.
QUEUE = "publishing"


@actor("questions.publish_due", queue=QUEUE, max_retries=3, time_limit=600_000)
async def publish_due_actor() -> None:
    await publish_due_questions()


register(
    PeriodicJob(
        name="publish-sweep",
        run=publish_due_questions,
        actor_name="questions.publish_due",
        queue=QUEUE,
        period_seconds=lambda: get_settings().faq_publish_sweep_seconds,
    )
)
