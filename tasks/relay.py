"""The outbox relay: committed events become deliveries (fan-out), one org at a time.

``tenancy.outbox.record_events`` writes events to the org's own ``outbox`` and marks the org in
``shared.outbox_pending``; after the change commits it queues ``outbox.relay`` for the org.
The relay claims that org's outbox rows (``FOR UPDATE SKIP LOCKED``, so concurrent relays share
the work), writes one delivery per active, non-deleted webhook subscribed to each event, and
deletes the rows, all in one transaction of the org's schema (``audit`` events become entries
of the org's audit log in that transaction, keyed by the event's id); the delivery messages go out
after it commits. Once it has seen the outbox empty it clears the org's marker, then looks
again behind every writer still holding the outbox (``LOCK ... IN SHARE MODE`` waits for them):
an event committed meanwhile re-marks the org and is relayed. A relay that finds the org's
relay flag set again after its drain (the next relay is queued) leaves the marker and that
re-check to the queued relay: one Redis read instead of four statements per relay of a burst.
When the relay message is lost (Redis down at commit, a worker killed), the periodic
``outbox-relay`` job visits the marked orgs (one indexed query when none is).

The relay actor sends the deliveries it committed itself, on the worker's event loop
(``_send_here``: ``engine.deliver_many`` per webhook, joining a send to that webhook already
running in this process), instead of one Dramatiq message per webhook: no enqueue, fetch and
ack per batch, and no wait in the queue between the relay and the attempt. The rows are the
truth either way: a send that fails goes out as messages after all, and deliveries left by a
killed worker are pending and due, which the ``deliveries-redrive`` job sends again. An org
relayed in this process moments ago waits GATHER_SECONDS before its flag is cleared, so a
burst of its events is relayed by one relay rather than one per event or two.

Rolling upgrade: processes of the previous release may still write ``shared.outbox`` until
they are replaced; the periodic job also relays the rows left there (``LEGACY_OUTBOX``, gone
with that table in a later release).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import structlog
from redis.exceptions import RedisError
from sqlalchemy import (
    BigInteger,
    Column,
    MetaData,
    String,
    Table,
    delete,
    literal,
    select,
    text,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.dispatch import by_webhook, enqueue_deliveries
from api.webhooks.models import Webhook
from api.webhooks.service import LIVE, NewDelivery, queue_deliveries
from tasks.db import worker_engine
from tasks.deliveries.engine import deliver_many, run_detaching
from tasks.embeddings import queue_embeddings
from tasks.jobs import PeriodicJob, register
from tasks.org_failures import each_org
from tasks.registry import actor
from tenancy.audit import AUDIT_EVENT, OrgAuditEntry, audit_entry_rows
from tenancy.db import shared_session, tenant_session
from tenancy.orgs import org_schema
from tenancy.outbox import (
    OUTBOX,
    PENDING,
    RELAY_ACTOR,
    clear_pending,
    mark_pending,
    relay_pending_key,
)
from tenancy.redis import loop_client
from tenancy.settings import get_settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)

RELAY_BATCH = 500
# An org relayed in this process less than GATHER_AFTER_SECONDS ago has events flowing: its
# next relay waits GATHER_SECONDS, its flag still set (so commits meanwhile queue no other
# relay), and then relays what gathered, instead of one relay per event or two. 0.1 s: a
# burst of 80 creates a second is relayed (audit, embeddings) 8 at a time; the worker spent
# 4.0 ms of CPU per create against 7.1 ms at 0.02 s (docs/performance.md, issue 40).
GATHER_SECONDS = 0.1
GATHER_AFTER_SECONDS = 0.5
SWEEP_MAX_ORGS = 1000

# The previous release's shared outbox (kept until a later release drops it).
LEGACY_OUTBOX = Table(
    "outbox",
    MetaData(schema="shared"),
    Column("id", BigInteger, primary_key=True),
    Column("org_id", String(40)),
    Column("event", String(40)),
    Column("data", JSONB),
)
AUDIT_ENTRIES = cast(Table, OrgAuditEntry.__table__)
_LOCK_OUTBOX = text("LOCK TABLE outbox IN SHARE MODE")


Sends = list["asyncio.Task[None]"]


async def _send_here(engine: AsyncEngine, org_id: str, pairs: list[tuple[str, str]]) -> None:
    """Send committed deliveries ``(delivery_id, webhook_id)`` from this event loop, one
    ``deliver_many`` per webhook at once; those of a send that fails go out as messages."""
    grouped = by_webhook(pairs)
    results = await asyncio.gather(
        *(deliver_many(engine, org_id, w, ids) for w, ids in grouped.items()),
        return_exceptions=True,
    )
    failed = [
        (delivery_id, webhook_id)
        for (webhook_id, ids), result in zip(grouped.items(), results, strict=True)
        if isinstance(result, BaseException)
        for delivery_id in ids
    ]
    if failed:
        log.warning("relay_send_failed", org_id=org_id, deliveries=len(failed))
        try:
            await asyncio.to_thread(enqueue_deliveries, org_id, failed)
        except Exception:
            # Pending and due: the re-drive sends them.
            log.warning("relay_send_not_queued", org_id=org_id, exc_info=True)


async def _drain(
    engine: AsyncEngine, org_id: str, schema: str, table: Table, sends: Sends | None = None
) -> int:
    """Fan out the org's rows of ``table`` (its outbox, or the legacy shared one) in batches
    until a batch comes back short. With ``sends``, each batch's deliveries are sent from
    this event loop once committed (tasks added to ``sends``), not queued as messages."""
    relayed = 0
    while True:
        async with tenant_session(engine, schema) as session:
            # Claim and remove a batch in one statement; it is put back if this rolls back.
            claimed = select(table.c.id)
            if table is LEGACY_OUTBOX:
                claimed = claimed.where(table.c.org_id == org_id)
            claimed = claimed.order_by(table.c.id).limit(RELAY_BATCH)
            returned = [table.c.id, table.c.event, table.c.data]
            if table is OUTBOX:
                returned += [table.c.event_id, table.c.created_at]
            rows = sorted(
                (
                    await session.execute(
                        delete(table)
                        .where(table.c.id.in_(claimed.with_for_update(skip_locked=True)))
                        .returning(*returned)
                    )
                ).all(),
                key=lambda row: row.id,
            )
            if not rows:
                return relayed
            audits = [
                (row.event_id, row.data, row.created_at) for row in rows if row.event == AUDIT_EVENT
            ]
            if audits:
                # Keyed by the event's id: an event relayed twice is one entry.
                await session.execute(
                    insert(AUDIT_ENTRIES).on_conflict_do_nothing(index_elements=["id"]),
                    audit_entry_rows(audits),
                )
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
            # With ``sends``, no messages after commit: the deliveries are sent below.
            queued = await queue_deliveries(session, org_id, items, send=sends is None)
            queue_embeddings(session, org_id, ((row.event, row.data) for row in rows))
            await commit(session)
        if sends is not None and queued:
            pairs = [(row.id, row.webhook_id) for row in queued]
            sends.append(asyncio.create_task(_send_here(engine, org_id, pairs)))
        relayed += len(rows)
        if len(rows) < RELAY_BATCH:
            return relayed


async def _unmark_if_empty(engine: AsyncEngine, org_id: str, schema: str) -> bool:
    """Clear the org's marker, then re-check its outbox once every writer that may have marked
    before the clear has ended (their insert holds ROW EXCLUSIVE on the outbox until commit,
    which SHARE waits for). True if it was empty; otherwise the marker is put back first."""
    await clear_pending(engine, org_id)
    async with tenant_session(engine, schema) as session:
        await session.execute(_LOCK_OUTBOX)
        empty = (await session.execute(select(OUTBOX.c.id).limit(1))).first() is None
        if not empty:
            await mark_pending(engine, org_id)
        await commit(session)
    return empty


async def relay_org(
    engine: AsyncEngine,
    org_id: str,
    *,
    clear_flag: bool = False,
    legacy: bool = False,
    sends: Sends | None = None,
) -> int:
    """Fan out every outbox row of one org (and, with ``legacy``, its rows left in the shared
    outbox), then clear its pending marker; returns how many events were relayed. With
    ``sends``, the new deliveries are sent from this event loop (``_drain``)."""
    schema = await org_schema(engine, org_id)
    if schema is None:
        return 0  # the org is gone; its outbox and marker went with it
    flag_cleared = False
    if clear_flag:
        await _gather(org_id)
        try:
            await loop_client().delete(relay_pending_key(org_id))
            flag_cleared = True
        except RedisError:
            # Relay anyway; a later event may wait for the flag's TTL or the periodic relay.
            log.warning("outbox_relay_flag_not_cleared", org_id=org_id)
    relayed = await _drain(engine, org_id, schema, LEGACY_OUTBOX) if legacy else 0
    while True:
        relayed += await _drain(engine, org_id, schema, OUTBOX, sends)
        if flag_cleared and await _next_relay_queued(org_id):
            # An event committed meanwhile queued the org's next relay: that one drains it and
            # clears the marker (which stays until then, so a lost message is swept).
            return relayed
        if await _unmark_if_empty(engine, org_id, schema):
            return relayed


_last_relay: dict[str, float] = {}  # per org: when a relay of this process last started


async def _gather(org_id: str) -> None:
    """Let a burst of the org's events gather before its relay (see GATHER_SECONDS)."""
    now = time.monotonic()
    last = _last_relay.get(org_id)
    if len(_last_relay) > 10_000:
        _last_relay.clear()
    if last is not None and now - last < GATHER_AFTER_SECONDS:
        await asyncio.sleep(GATHER_SECONDS)
        now = time.monotonic()
    _last_relay[org_id] = now


async def _next_relay_queued(org_id: str) -> bool:
    """The org's relay flag is set again since this relay cleared it: a relay is queued."""
    try:
        return bool(await loop_client().exists(relay_pending_key(org_id)))
    except RedisError:
        return False  # clear the marker and re-check as usual


def _due_orgs() -> Any:
    """One statement: the marked orgs (oldest first) and the orgs with rows in the legacy
    shared outbox; each an index scan, so nothing pending costs one indexed query."""
    marked = (
        select(PENDING.c.org_id, literal(False).label("legacy"))
        .order_by(PENDING.c.since)
        .limit(SWEEP_MAX_ORGS)
        .subquery()
    )
    legacy = select(LEGACY_OUTBOX.c.org_id).distinct().limit(SWEEP_MAX_ORGS).subquery()
    return union_all(
        select(marked.c.org_id, marked.c.legacy),
        select(legacy.c.org_id, literal(True).label("legacy")),
    )


async def relay_all(engine: AsyncEngine | None = None) -> dict[str, int]:
    """The periodic job: relay the outbox rows of every marked org. An org that fails (its
    schema broken) is logged and counted, and the others are relayed; its rows and marker stay
    for the next sweep. Returns ``{"orgs", "events", "failed"}``."""
    if _sweeping:
        # A sweep of this process is still running (a period shorter than a sweep): it visits
        # the marked orgs already; piling sweeps up would only take the worker's threads.
        return {"orgs": 0, "events": 0, "failed": 0}
    _sweeping.add(True)
    try:
        return await _sweep(engine or worker_engine())
    finally:
        _sweeping.clear()


_sweeping: set[bool] = set()  # non-empty while a sweep of this process runs


async def _sweep(engine: AsyncEngine) -> dict[str, int]:
    async with shared_session(engine) as session:
        due: dict[str, bool] = {}
        for org_id, legacy in (await session.execute(_due_orgs())).all():
            due[org_id] = due.get(org_id, False) or legacy
    org_ids = list(due)
    counts, failed = await each_org(
        "outbox-relay", org_ids, lambda o: relay_org(engine, o, legacy=due[o])
    )
    relayed = sum(counts)
    if relayed or failed:
        log.info("outbox_swept", events=relayed, orgs=len(org_ids), failed=failed)
    return {"orgs": len(org_ids), "events": relayed, "failed": failed}


@actor(RELAY_ACTOR, max_retries=10, min_backoff=500, max_backoff=30_000)
async def relay_outbox(org_id: str) -> None:
    sends: Sends = []
    try:
        await relay_org(worker_engine(), org_id, clear_flag=True, sends=sends)
    finally:
        if sends:
            # A send still waiting on its receiver after a moment finishes without this thread.
            await run_detaching(_sent(sends))


async def _sent(sends: Sends) -> None:
    await asyncio.gather(*sends)


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
