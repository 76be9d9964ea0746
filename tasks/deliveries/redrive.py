"""The re-drive: pending deliveries whose attempt is overdue are sent again.

A worker that dies mid-attempt leaves the lease to expire (and ids handed over or detached
sends, the rows pending); a message can be lost. ``redrive_overdue`` (the periodic
``deliveries-redrive`` job) finds deliveries overdue by ``FAQ_WEBHOOK_REDRIVE_AFTER_SECONDS``
through the small ``shared.delivery_schedule`` table (one row per org with pending
deliveries, its earliest due time at most the real one), so it visits only orgs with overdue
work. Each org is one transaction holding its schedule row (``FOR UPDATE SKIP LOCKED``: two
re-drives split the orgs): the overdue rows become due now, the schedule row is set to the
earliest pending time (removed when none is left), and one ``deliveries.send`` per delivery
goes out after commit.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import structlog
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.dispatch import resend_after_commit
from api.webhooks.models import Delivery, DeliverySchedule
from tasks.db import worker_engine
from tasks.org_failures import each_org
from tenancy.clock import utcnow
from tenancy.db import shared_session, tenant_session
from tenancy.orgs import org_schema
from tenancy.schedule import reset_due
from tenancy.settings import get_settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)

REDRIVE_MAX_ORGS = 1000
REDRIVE_BATCH = 1000


async def _redrive_org(engine: AsyncEngine, org_id: str, cutoff: datetime) -> int:
    schema = await org_schema(engine, org_id)
    if schema is None:
        return 0
    async with tenant_session(engine, schema) as session:
        marker = (
            await session.execute(
                select(DeliverySchedule)
                .where(DeliverySchedule.org_id == org_id)
                .with_for_update(skip_locked=True)
            )
        ).scalar_one_or_none()
        if marker is None:
            return 0
        overdue = (
            await session.execute(
                select(Delivery.id, Delivery.webhook_id)
                .where(Delivery.status == "pending", Delivery.next_attempt_at < cutoff)
                .order_by(Delivery.next_attempt_at)
                .limit(REDRIVE_BATCH)
            )
        ).all()
        now = utcnow()
        if overdue:
            await session.execute(
                update(Delivery)
                .where(Delivery.id.in_([d.id for d in overdue]))
                .values(next_attempt_at=now)
            )
        earliest = (
            await session.execute(
                select(func.min(Delivery.next_attempt_at)).where(Delivery.status == "pending")
            )
        ).scalar_one_or_none()
        await reset_due(session, DeliverySchedule, org_id, earliest)
        resend_after_commit(session, org_id, [(d.id, d.webhook_id) for d in overdue])
        await commit(session)
    return len(overdue)


async def redrive_overdue(engine: AsyncEngine | None = None) -> dict[str, int]:
    """The periodic job: re-send pending deliveries whose attempt is overdue (lost message,
    worker killed mid-attempt). Reads only the orgs the schedule table names as due. An org
    that fails (its schema broken) is logged and counted, and the others are re-driven.
    Returns ``{"orgs", "deliveries", "failed"}``."""
    engine = engine or worker_engine()
    cutoff = utcnow() - timedelta(seconds=get_settings().faq_webhook_redrive_after_seconds)
    async with shared_session(engine) as session:
        org_ids = list(
            (
                await session.execute(
                    select(DeliverySchedule.org_id)
                    .where(DeliverySchedule.next_due_at < cutoff)
                    .order_by(DeliverySchedule.next_due_at)
                    .limit(REDRIVE_MAX_ORGS)
                )
            ).scalars()
        )
    counts, failed = await each_org(
        "deliveries-redrive", org_ids, lambda o: _redrive_org(engine, o, cutoff)
    )
    redriven = sum(counts)
    if redriven or failed:
        log.info("deliveries_redriven", deliveries=redriven, orgs=len(org_ids), failed=failed)
    return {"orgs": len(org_ids), "deliveries": redriven, "failed": failed}
