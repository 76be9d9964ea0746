"""The outbox relay: committed events become deliveries (fan-out), one org at a time.

``tenancy.outbox.record_events`` queues ``outbox.relay`` for the org after the change commits.
The relay claims that org's outbox rows (``FOR UPDATE SKIP LOCKED``, so concurrent relays share
the work), writes one delivery per active, non-deleted webhook subscribed to each event, and
deletes the rows, all in one transaction; the delivery messages go out after it commits. When
the relay message is lost (Redis down at commit, a worker killed), the periodic
``outbox-relay`` job finds the rows left behind and relays them.
"""

from __future__ import annotations

import structlog
from redis.exceptions import RedisError
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Webhook
from api.webhooks.service import LIVE, NewDelivery, queue_deliveries
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register
from tasks.org_failures import each_org
from tasks.registry import actor
from tenancy.db import shared_session, tenant_session
from tenancy.orgs import org_schema
from tenancy.outbox import OUTBOX, RELAY_ACTOR, OutboxEvent, relay_pending_key
from tenancy.redis import loop_client
from tenancy.settings import get_settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)

RELAY_BATCH = 500
SWEEP_MAX_ORGS = 1000


async def relay_org(engine: AsyncEngine, org_id: str, *, clear_flag: bool = False) -> int:
    """Fan out every outbox row of one org; returns how many events were relayed."""
    schema = await org_schema(engine, org_id)
    if schema is None:
        return 0  # the org is gone; its outbox rows went with it (ON DELETE CASCADE)
    if clear_flag:
        try:
            await loop_client().delete(relay_pending_key(org_id))
        except RedisError:
            # Relay anyway; a later event may wait for the flag's TTL or the periodic relay.
            log.warning("outbox_relay_flag_not_cleared", org_id=org_id)
    relayed = 0
    while True:
        async with tenant_session(engine, schema) as session:
            # Claim and remove a batch in one statement; it is put back if this rolls back.
            claimed = select(OUTBOX.c.id).where(OUTBOX.c.org_id == org_id)
            claimed = claimed.order_by(OUTBOX.c.id).limit(RELAY_BATCH)
            rows = sorted(
                (
                    await session.execute(
                        delete(OUTBOX)
                        .where(OUTBOX.c.id.in_(claimed.with_for_update(skip_locked=True)))
                        .returning(OUTBOX.c.id, OUTBOX.c.event, OUTBOX.c.data)
                    )
                ).all(),
                key=lambda row: row.id,
            )
            if not rows:
                return relayed
            subscribers = (
                await session.execute(
                    select(Webhook.id, Webhook.events)
                    .where(LIVE, Webhook.active)
                    .order_by(Webhook.id)
                )
            ).all()
            items = [
                NewDelivery(hook.id, row.event, row.data)
                for row in rows
                for hook in subscribers
                if row.event in hook.events
            ]
            await queue_deliveries(session, org_id, items)
            await commit(session)
        relayed += len(rows)
        if len(rows) < RELAY_BATCH:
            return relayed


async def relay_all(engine: AsyncEngine | None = None) -> dict[str, int]:
    """The periodic job: relay the outbox rows of every org that has some. An org that fails
    (its schema broken) is logged and counted, and the others are relayed; its rows stay for
    the next sweep. Returns ``{"orgs", "events", "failed"}``."""
    engine = engine or worker_engine()
    async with shared_session(engine) as session:
        org_ids = list(
            (
                await session.execute(select(OutboxEvent.org_id).distinct().limit(SWEEP_MAX_ORGS))
            ).scalars()
        )
    counts, failed = await each_org("outbox-relay", org_ids, lambda o: relay_org(engine, o))
    relayed = sum(counts)
    if relayed or failed:
        log.info("outbox_swept", events=relayed, orgs=len(org_ids), failed=failed)
    return {"orgs": len(org_ids), "events": relayed, "failed": failed}


@actor(RELAY_ACTOR, max_retries=10, min_backoff=500, max_backoff=30_000)
async def relay_outbox(org_id: str) -> None:
    await relay_org(worker_engine(), org_id, clear_flag=True)


@actor("outbox.relay_all", max_retries=0)
async def relay_outbox_all() -> None:
    await relay_all()


register(
    PeriodicJob(
        name="outbox-relay",
        run=relay_all,
        actor_name="outbox.relay_all",
        period_seconds=lambda: get_settings().faq_outbox_sweep_seconds,
    )
)
