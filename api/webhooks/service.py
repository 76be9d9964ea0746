"""Webhook rules (SPEC "Webhooks", CONTRACT section 6). Services never commit: the request (or
the relay actor) owns the transaction. New deliveries are rows written in that transaction,
and the org's re-drive schedule is lowered to them (``tenancy.schedule.mark_due``); their
messages go out after commit (``api/webhooks/dispatch.py``), and the re-drive job finds any
whose message was lost (the rows are the source of truth).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import structlog
from sqlalchemy import Integer, String, and_, cast, delete, func, literal, or_, select, update
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from api.errors import NotFound, ValidationErrorCode, WebhookInactive, field_error
from api.events import EVENT_CATALOG
from api.webhooks.dispatch import enqueue_deliveries_after_commit
from api.webhooks.models import DELIVERIES, WEBHOOKS, Delivery, DeliverySchedule, Webhook
from api.webhooks.schemas import WebhookCreate, delivery_public, webhook_public
from api.webhooks.signing import encrypt_secret, new_secret
from api.webhooks.url_safety import UnsafeUrl, check_url
from billing.limits import ensure_room, ensure_webhooks_allowed
from tenancy.audit import AUDIT_EVENT, Actor, audit_change, audit_payload
from tenancy.clock import utcnow
from tenancy.ids import looks_like_id, new_id
from tenancy.outbox import record_events
from tenancy.principal import Principal
from tenancy.schedule import mark_due
from tenancy.settings import get_settings

log = structlog.get_logger(__name__)
LOCAL = "a receiver on this machine or network: FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (dev only)"

LIVE = Webhook.deleted_at.is_(None)
AUDITED = "webhook"
# The fields a PATCH may change, as the public shape names them (``active`` is audited apart:
# ``activated`` / ``deactivated``).
EDITABLE = ("url", "events", "description")
PING = "ping"
RECOVER_MAX_AGE = timedelta(days=14)
REPLAYS = aliased(Delivery, name="replays")


# ---- checks ---------------------------------------------------------------------------------


def _checked_events(events: list[str]) -> list[str]:
    unknown = [e for e in events if e not in EVENT_CATALOG]
    if unknown:
        raise ValidationErrorCode(
            "Unknown event types; see the event catalog.",
            details=[{"field": "events", "issue": f"unknown event {e!r}"} for e in unknown],
        )
    return list(dict.fromkeys(events))


async def _checked_url(url: str) -> str:
    allow_private = get_settings().faq_webhook_allow_private_networks
    try:
        await check_url(url, allow_private=allow_private)
    except UnsafeUrl as exc:
        # The access log says 400; this says why (and, in dev, how to reach a local receiver).
        log.info("webhook_url_refused", reason=str(exc), hint=None if allow_private else LOCAL)
        raise ValidationErrorCode(
            f"The webhook URL is not allowed: {exc}.", details=field_error("url", str(exc))
        ) from None
    return url


async def _load(session: AsyncSession, webhook_id: str, *, lock: bool = False) -> Webhook:
    if not looks_like_id(webhook_id, "wh"):
        raise NotFound("No webhook with that id in this organization.")
    stmt = select(Webhook).where(LIVE, Webhook.id == webhook_id)
    if lock:
        stmt = stmt.with_for_update()
    webhook = (await session.execute(stmt)).scalar_one_or_none()
    if webhook is None:
        raise NotFound("No webhook with that id in this organization.")
    return webhook


# ---- webhooks -------------------------------------------------------------------------------


async def _live_webhooks(session: AsyncSession) -> int:
    """Live (not deleted) webhooks, inactive ones included: the count the plan caps."""
    return int(await session.scalar(select(func.count()).select_from(Webhook).where(LIVE)) or 0)


async def create_webhook(
    session: AsyncSession, org: Principal, body: WebhookCreate
) -> dict[str, Any]:
    ensure_webhooks_allowed(org.plan)
    events = _checked_events(body.events)
    url = await _checked_url(body.url)
    # After the URL check (it may resolve a name): the cap's lock is held to commit.
    await ensure_room(session, org.id, org.plan, "webhooks", lambda: _live_webhooks(session))
    secret = new_secret()
    now = utcnow()
    webhook = Webhook(
        id=new_id("wh"),
        url=url,
        events=events,
        active=True,
        description=body.description,
        secret_ciphertext=encrypt_secret(secret),
        delivery_count=0,
        created_at=now,
        updated_at=now,
    )
    session.add(webhook)
    await session.flush()
    public = webhook_public(webhook)
    # The audit entry holds the public shape: never the secret nor its ciphertext.
    await audit_change(
        session,
        org.id,
        resource=AUDITED,
        resource_id=webhook.id,
        action="created",
        actor=org.actor,
        before=None,
        after=public,
    )
    return {**public, "secret": secret}


async def list_webhooks(
    session: AsyncSession, *, limit: int, after: list[Any] | None
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    stmt = select(Webhook).where(LIVE)
    if after is not None:
        stmt = stmt.where(Webhook.id > str(after[0]))
    rows = list((await session.execute(stmt.order_by(Webhook.id).limit(limit + 1))).scalars())
    page = rows[:limit]
    items = [webhook_public(w) for w in page]
    return items, ([page[-1].id] if len(rows) > limit else None)


async def get_webhook(session: AsyncSession, webhook_id: str) -> dict[str, Any]:
    return webhook_public(await _load(session, webhook_id))


def _update_audits(
    webhook_id: str, actor: Actor, before: dict[str, Any], after: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """The audit events of a PATCH: ``activated`` / ``deactivated`` when ``active`` changed,
    ``updated`` with the other changed fields (changed fields only)."""
    events = []
    if before["active"] != after["active"]:
        action = "activated" if after["active"] else "deactivated"
        events.append((action, {"active": before["active"]}, {"active": after["active"]}))
    changed = [f for f in EDITABLE if before[f] != after[f]]
    if changed:
        events.append(("updated", {f: before[f] for f in changed}, {f: after[f] for f in changed}))
    return [
        (
            AUDIT_EVENT,
            audit_payload(
                resource=AUDITED,
                resource_id=webhook_id,
                action=action,
                actor=actor,
                before=old,
                after=new,
            ),
        )
        for action, old, new in events
    ]


async def update_webhook(
    session: AsyncSession, org: Principal, webhook_id: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """PATCH: ``changes`` maps the client's field names to the values sent. Audited (changed
    fields only); a PATCH that changes nothing writes nothing."""
    for field in ("url", "events", "active"):
        if field in changes and changes[field] is None:
            raise ValidationErrorCode(details=field_error(field, "must not be null"))
    webhook = await _load(session, webhook_id, lock=True)
    values: dict[str, Any] = {}
    if "url" in changes and changes["url"] != webhook.url:
        values["url"] = await _checked_url(changes["url"])
    if "events" in changes:
        events = _checked_events(changes["events"])
        if events != list(webhook.events):
            values["events"] = events
    if "active" in changes and changes["active"] != webhook.active:
        values["active"] = changes["active"]
    if "description" in changes and changes["description"] != webhook.description:
        values["description"] = changes["description"]
    if not values:
        return webhook_public(webhook)
    before = webhook_public(webhook)
    values["updated_at"] = utcnow()
    await session.execute(update(Webhook).where(Webhook.id == webhook.id).values(**values))
    await session.refresh(webhook)
    after = webhook_public(webhook)
    await record_events(session, org.id, _update_audits(webhook.id, org.actor, before, after))
    return after


async def stop_pending_deliveries(session: AsyncSession, webhook_id: str) -> int:
    """Pending deliveries of the webhook become ``failed`` (deleted webhook, or a 410)."""
    result = await session.execute(
        update(Delivery)
        .where(Delivery.webhook_id == webhook_id, Delivery.status == "pending")
        .values(status="failed", next_attempt_at=None, lease_token=None, updated_at=utcnow())
        .returning(Delivery.id)
    )
    return len(result.all())


async def delete_webhook(session: AsyncSession, org: Principal, webhook_id: str) -> None:
    """Soft delete: the webhook disappears, gets no new deliveries, its retries stop."""
    webhook = await _load(session, webhook_id, lock=True)
    await audit_change(
        session,
        org.id,
        resource=AUDITED,
        resource_id=webhook.id,
        action="deleted",
        actor=org.actor,
        before=webhook_public(webhook),
        after=None,
    )
    now = utcnow()
    await session.execute(
        update(Webhook)
        .where(Webhook.id == webhook.id)
        .values(deleted_at=now, active=False, updated_at=now)
    )
    await stop_pending_deliveries(session, webhook.id)


# ---- deliveries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewDelivery:
    webhook_id: str
    event: str
    data: dict[str, Any]
    replay_of: str | None = None


async def _count_deliveries(session: AsyncSession, counts: Counter[str]) -> None:
    """Add each webhook's new deliveries to its ``delivery_count``: one statement for a
    fan-out to any number of webhooks (was one UPDATE per webhook). Two relays of one org
    run the same plan over the same rows, so they lock them in the same order."""
    ids = sorted(counts)
    added = (
        func.unnest(
            cast(literal(ids), ARRAY(String)),
            cast(literal([counts[i] for i in ids]), ARRAY(Integer)),
        )
        .table_valued("webhook_id", "added")
        .render_derived(name="added")
    )
    await session.execute(
        update(WEBHOOKS)
        .where(WEBHOOKS.c.id == added.c.webhook_id)
        .values(delivery_count=WEBHOOKS.c.delivery_count + added.c.added)
    )


async def queue_deliveries(
    session: AsyncSession, org_id: str, items: list[NewDelivery], *, send: bool = True
) -> list[SimpleNamespace]:
    """Create pending deliveries in the caller's transaction; send them after commit (as
    Dramatiq messages; ``send=False``: the caller sends them itself once committed, as the
    relay does)."""
    if not items:
        return []
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for item in items:
        delivery_id = new_id("dlv")
        rows.append(
            {
                "id": delivery_id,
                "webhook_id": item.webhook_id,
                "event": item.event,
                "data": item.data,
                "status": "pending",
                "attempts": [],
                "attempt_count": 0,
                "lease_token": None,
                "attempt_started_at": None,
                "next_attempt_at": now,
                "replay_of": item.replay_of,
                # The body is signed now until an attempt signs it afresh (public ``payload``).
                "sent_at": now,
                "created_at": now,
                "updated_at": now,
            }
        )
    await session.execute(insert(DELIVERIES), rows)
    await _count_deliveries(session, Counter(i.webhook_id for i in items))
    await mark_due(session, DeliverySchedule, org_id, now)
    if send:
        pairs = [(r["id"], r["webhook_id"]) for r in rows]
        enqueue_deliveries_after_commit(session, org_id, pairs)
    return [SimpleNamespace(**r) for r in rows]


def _require_active(webhook: Webhook) -> None:
    if not webhook.active:
        raise WebhookInactive()


async def send_test(session: AsyncSession, org: Principal, webhook_id: str) -> dict[str, Any]:
    """A synthetic ping: ``event: "ping"``, ``data: {"webhookId": …}``."""
    webhook = await _load(session, webhook_id, lock=True)
    _require_active(webhook)
    [delivery] = await queue_deliveries(
        session, org.id, [NewDelivery(webhook.id, PING, {"webhookId": webhook.id})]
    )
    return delivery_public(delivery)


async def _load_delivery(session: AsyncSession, webhook_id: str, delivery_id: str) -> Delivery:
    if not looks_like_id(delivery_id, "dlv"):
        raise NotFound("No delivery with that id for this webhook.")
    delivery = (
        await session.execute(
            select(Delivery).where(Delivery.id == delivery_id, Delivery.webhook_id == webhook_id)
        )
    ).scalar_one_or_none()
    if delivery is None:
        raise NotFound("No delivery with that id for this webhook.")
    return delivery


async def get_delivery(session: AsyncSession, webhook_id: str, delivery_id: str) -> dict[str, Any]:
    webhook = await _load(session, webhook_id)
    return delivery_public(await _load_delivery(session, webhook.id, delivery_id))


async def list_deliveries(
    session: AsyncSession, webhook_id: str, *, limit: int, after: list[Any] | None
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """Newest first (``createdAt``, then id, both descending)."""
    webhook = await _load(session, webhook_id)
    stmt = select(Delivery).where(Delivery.webhook_id == webhook.id)
    if after is not None:
        at, last_id = datetime.fromisoformat(str(after[0])), str(after[1])
        stmt = stmt.where(
            or_(Delivery.created_at < at, and_(Delivery.created_at == at, Delivery.id < last_id))
        )
    stmt = stmt.order_by(Delivery.created_at.desc(), Delivery.id.desc()).limit(limit + 1)
    rows = list((await session.execute(stmt)).scalars())
    page = rows[:limit]
    items = [delivery_public(d) for d in page]
    if len(rows) <= limit:
        return items, None
    return items, [page[-1].created_at.isoformat(), page[-1].id]


async def replay_delivery(
    session: AsyncSession, org: Principal, webhook_id: str, delivery_id: str
) -> dict[str, Any]:
    """Re-fire a past delivery: same event and data, a new delivery id, ``replayOf`` set."""
    webhook = await _load(session, webhook_id, lock=True)
    original = await _load_delivery(session, webhook.id, delivery_id)
    _require_active(webhook)
    [delivery] = await queue_deliveries(
        session,
        org.id,
        [NewDelivery(webhook.id, original.event, original.data, replay_of=original.id)],
    )
    return delivery_public(delivery)


async def recover(session: AsyncSession, org: Principal, webhook_id: str, since: datetime) -> int:
    """Replay every failed delivery of the webhook created since ``since`` (<= 14 days) that
    no delivery replays yet: one an earlier recover or replay re-sent is left alone (the newest
    failure of a chain is re-sent, never its ancestors), so repeated calls cannot multiply the
    rows. The webhook's row lock serializes concurrent recovers."""
    if since < utcnow() - RECOVER_MAX_AGE:
        raise ValidationErrorCode(
            "since must be at most 14 days back.",
            details=field_error("since", "older than 14 days"),
        )
    webhook = await _load(session, webhook_id, lock=True)
    _require_active(webhook)
    failed = (
        await session.execute(
            select(Delivery.id, Delivery.event, Delivery.data)
            .where(
                Delivery.webhook_id == webhook.id,
                Delivery.status == "failed",
                Delivery.created_at >= since,
                ~select(REPLAYS.id).where(REPLAYS.replay_of == Delivery.id).exists(),
            )
            .order_by(Delivery.created_at, Delivery.id)
        )
    ).all()
    created = await queue_deliveries(
        session,
        org.id,
        [NewDelivery(webhook.id, row.event, row.data, replay_of=row.id) for row in failed],
    )
    return len(created)


# ---- retention ------------------------------------------------------------------------------


async def purge_history_batch(session: AsyncSession, created_before: datetime, limit: int) -> int:
    """Delete at most ``limit`` deliveries (their attempts are in the row) created before
    ``created_before``, oldest first. The caller commits; one batch, one short transaction."""
    doomed = (
        select(Delivery.id)
        .where(Delivery.created_at < created_before)
        .order_by(Delivery.created_at)
        .limit(limit)
        .scalar_subquery()
    )
    deleted = (
        await session.execute(
            delete(Delivery).where(Delivery.id.in_(doomed)).returning(Delivery.id)
        )
    ).all()
    return len(deleted)


async def purge_deleted_webhooks_batch(
    session: AsyncSession, deleted_before: datetime, limit: int
) -> int:
    """Delete at most ``limit`` webhooks soft-deleted before ``deleted_before`` that have no
    delivery left (so create-and-delete cycles leave no rows behind for ever)."""
    doomed = (
        select(Webhook.id)
        .where(
            Webhook.deleted_at.is_not(None),
            Webhook.deleted_at < deleted_before,
            ~select(Delivery.id).where(Delivery.webhook_id == Webhook.id).exists(),
        )
        .limit(limit)
        .scalar_subquery()
    )
    deleted = (
        await session.execute(delete(Webhook).where(Webhook.id.in_(doomed)).returning(Webhook.id))
    ).all()
    return len(deleted)
