"""Stripe events: stored once by id when they arrive, applied later by one actor.

The webhook only verifies, stores (``INSERT ... ON CONFLICT DO NOTHING``) and enqueues; the
actor ``billing.apply_stripe_event`` calls ``apply_event``, and the periodic re-drive applies
whatever a lost message left. Applying is idempotent: an event id applies once (``processed_at``),
and an event older (Stripe's ``created``) than the last one applied to its subscription changes
nothing. Stripe's ``created`` has one-second resolution, so two events of one subscription may
tie: a subscription that ended for good (deleted, ``canceled``, ``incomplete_expired``) never
comes back in Stripe, so no event of the same second or later revives it (the terminal state
wins a tie, in either order of arrival). Events apply one at a time (one advisory lock): a few
per org per month.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import structlog
from sqlalchemy import ColumnElement, delete, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from billing.models import StripeEvent, StripeSubscription
from billing.plans import Plan, highest, plan_for_lookup_key
from tenancy.audit import system_actor
from tenancy.clock import utcnow
from tenancy.db import shared_session
from tenancy.errors import ValidationFailed, field_error
from tenancy.models import Organization
from tenancy.orgs import set_plan

log = structlog.get_logger(__name__)

CHECKOUT_COMPLETED = "checkout.session.completed"
SUBSCRIPTION_EVENTS = frozenset(
    {
        "customer.subscription.created",
        "customer.subscription.updated",
        "customer.subscription.deleted",
    }
)
HANDLED_TYPES = frozenset({CHECKOUT_COMPLETED, *SUBSCRIPTION_EVENTS})

# CONTRACT section 7: active/trialing grant the price's plan; these end it (FREE); any other
# status (past_due, incomplete) leaves the plan unchanged. `paused` (a trial ended without a
# payment method) grants no service either.
GRANTING_STATUSES = frozenset({"active", "trialing"})
ENDED_STATUSES = frozenset({"canceled", "unpaid", "incomplete_expired", "paused"})
# Final in Stripe: a subscription in these states is never active again (a deleted one is
# `canceled`, whatever status its last snapshot in the event carries).
FINAL_STATUSES = frozenset({"canceled", "incomplete_expired"})
SUBSCRIPTION_DELETED = "customer.subscription.deleted"
# A subscription in these states still exists in Stripe: a new checkout would bill twice.
LIVE_STATUSES = frozenset({"active", "trialing", "past_due", "unpaid", "paused"})

APPLY_LOCK = "billing:apply-stripe-events"
# The actor that applies one stored event (declared in ``tasks/billing.py``) and its queue:
# Stripe events never wait behind a burst of webhook deliveries.
APPLY_ACTOR = "billing.apply_stripe_event"
QUEUE = "billing"
KEEP_PROCESSED = timedelta(days=30)  # Stripe retries an event for 3 days at most


class MalformedEvent(Exception):
    pass


@dataclass(frozen=True)
class ReceivedEvent:
    id: str
    type: str
    created: datetime
    payload: dict[str, Any]

    @property
    def handled(self) -> bool:
        return self.type in HANDLED_TYPES


def parse_event(raw: bytes) -> ReceivedEvent:
    """The verified body as an event: an object with ``id``, ``type`` and ``created``."""
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ValidationFailed("The event is not valid JSON.") from None
    if not isinstance(payload, dict):
        raise ValidationFailed("The event must be a JSON object.")
    event_id, kind, created = payload.get("id"), payload.get("type"), payload.get("created")
    if not isinstance(event_id, str) or not event_id:
        raise ValidationFailed(details=field_error("id", "required"))
    if not isinstance(kind, str) or not kind:
        raise ValidationFailed(details=field_error("type", "required"))
    if not isinstance(created, int) or isinstance(created, bool):
        raise ValidationFailed(details=field_error("created", "required"))
    try:
        when = datetime.fromtimestamp(created, UTC)
    except (OverflowError, OSError, ValueError):
        raise ValidationFailed(details=field_error("created", "not a Unix timestamp")) from None
    return ReceivedEvent(event_id, kind, when, payload)


async def store_event(session: AsyncSession, event: ReceivedEvent) -> bool:
    """Store the event once by id. True when it still has to be applied (new, or stored
    earlier but not applied yet: Stripe's retry then re-sends the message)."""
    inserted = await session.execute(
        pg_insert(StripeEvent)
        .values(id=event.id, type=event.type, created=event.created, payload=event.payload)
        .on_conflict_do_nothing(index_elements=[StripeEvent.id])
        .returning(StripeEvent.id)
    )
    if inserted.first() is not None:
        return True
    processed_at = await session.scalar(
        select(StripeEvent.processed_at).where(StripeEvent.id == event.id)
    )
    return processed_at is None


# ---- applying ------------------------------------------------------------------------------


async def apply_event(engine: AsyncEngine, event_id: str) -> str | None:
    """Apply one stored event (at most once); returns what it did, None if it is unknown."""
    async with shared_session(engine) as session, session.begin():
        await session.execute(
            text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": APPLY_LOCK}
        )
        event = await session.get(StripeEvent, event_id)
        if event is None:
            log.warning("stripe_event_unknown", event_id=event_id)
            return None
        if event.processed_at is not None:
            return event.outcome
        try:
            outcome = await _apply(engine, session, event)
        except MalformedEvent as exc:
            outcome = "malformed"
            log.warning("stripe_event_malformed", event_id=event.id, reason=str(exc))
        event.processed_at = utcnow()
        event.outcome = outcome
    log.info("stripe_event_applied", event_id=event_id, type=event.type, outcome=outcome)
    return outcome


async def _apply(engine: AsyncEngine, session: AsyncSession, event: StripeEvent) -> str:
    if event.type == CHECKOUT_COMPLETED:
        return await _link_customer(session, _object_of(event))
    if event.type in SUBSCRIPTION_EVENTS:
        return await _apply_subscription(engine, session, event)
    return "ignored"


def _object_of(event: StripeEvent) -> dict[str, Any]:
    data = event.payload.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    if not isinstance(obj, dict):
        raise MalformedEvent("data.object is missing")
    return obj


def _id_of(value: Any) -> str | None:
    """A reference that Stripe sends as an id, or as the object when expanded."""
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value else None


async def _org_where(session: AsyncSession, condition: ColumnElement[bool]) -> Organization | None:
    return (await session.execute(select(Organization).where(condition))).scalar_one_or_none()


async def _link_customer(session: AsyncSession, checkout: dict[str, Any]) -> str:
    """``checkout.session.completed``: ``client_reference_id`` (org slug) gets the customer."""
    slug = checkout.get("client_reference_id")
    customer = _id_of(checkout.get("customer"))
    if not isinstance(slug, str) or not slug or customer is None:
        return "ignored"
    org = await _org_where(session, Organization.slug == slug)
    if org is None:
        return "org_unknown"
    holder = await _org_where(session, Organization.stripe_customer_id == customer)
    if holder is not None and holder.id != org.id:
        log.warning("stripe_customer_linked_elsewhere", customer=customer, org=slug)
        return "customer_linked_elsewhere"
    if org.stripe_customer_id == customer:
        return "unchanged"
    await session.execute(
        update(Organization).where(Organization.id == org.id).values(stripe_customer_id=customer)
    )
    return "customer_linked"


def _plan_of_items(subscription: dict[str, Any]) -> Plan | None:
    """The plan of the subscription's prices (by ``lookup_key``); the best if several."""
    items = subscription.get("items")
    data = items.get("data") if isinstance(items, dict) else None
    plans: list[Plan] = []
    for item in data if isinstance(data, list) else []:
        price = item.get("price") if isinstance(item, dict) else None
        lookup_key = price.get("lookup_key") if isinstance(price, dict) else None
        plan = plan_for_lookup_key(lookup_key if isinstance(lookup_key, str) else None)
        if plan is not None:
            plans.append(plan)
    return highest(plans) if plans else None


async def _org_of_subscription(
    session: AsyncSession, subscription: dict[str, Any], known: StripeSubscription | None
) -> Organization | None:
    """``metadata.org`` (set by our checkout), else the org seen before, else the customer."""
    metadata = subscription.get("metadata")
    slug = metadata.get("org") if isinstance(metadata, dict) else None
    org: Organization | None = None
    if isinstance(slug, str) and slug:
        org = await _org_where(session, Organization.slug == slug)
    if org is None and known is not None:
        org = await _org_where(session, Organization.id == known.org_id)
    customer = _id_of(subscription.get("customer"))
    if org is None and customer is not None:
        org = await _org_where(session, Organization.stripe_customer_id == customer)
    return org


async def _apply_subscription(
    engine: AsyncEngine, session: AsyncSession, event: StripeEvent
) -> str:
    subscription = _object_of(event)
    subscription_id = _id_of(subscription)
    status = subscription.get("status")
    if subscription_id is None or not isinstance(status, str):
        raise MalformedEvent("the subscription has no id or status")
    if event.type == SUBSCRIPTION_DELETED and status not in FINAL_STATUSES:
        status = "canceled"  # the event carries the subscription as it was before it ended
    known = await session.get(StripeSubscription, subscription_id)
    if known is not None and event.created < known.last_event_created:
        return "stale"
    if known is not None and known.status in FINAL_STATUSES and status not in FINAL_STATUSES:
        # Ended for good: an event of the same second (or a later one taken from an older
        # snapshot) that says otherwise is out of date. The terminal state wins the tie.
        return "subscription_ended"
    org = await _org_of_subscription(session, subscription, known)
    if org is None:
        log.warning("stripe_subscription_org_unknown", subscription=subscription_id)
        return "org_unknown"

    granted: Plan | None = Plan(known.plan) if known is not None and known.plan else None
    changes_plan = False
    outcome = "plan_unchanged"
    if status in ENDED_STATUSES:
        granted, changes_plan = None, True
    elif status in GRANTING_STATUSES:
        priced = _plan_of_items(subscription)
        if priced is None:
            log.warning("stripe_price_lookup_key_unknown", subscription=subscription_id)
            outcome = "price_unknown"
        else:
            granted, changes_plan = priced, True

    if changes_plan:
        # Another live subscription of the same org keeps granting its plan.
        others = await session.scalars(
            select(StripeSubscription.plan).where(
                StripeSubscription.org_id == org.id,
                StripeSubscription.id != subscription_id,
                StripeSubscription.plan.is_not(None),
            )
        )
        target = highest([Plan(p) for p in others if p] + ([granted] if granted else []))
        # set_plan commits on its own (audit + NOTIFY). This transaction has written nothing
        # yet, so it holds no lock set_plan waits for; a crash before our commit re-applies
        # the event, and set_plan to the same plan is a no-op.
        await set_plan(
            engine,
            org.slug,
            target,
            actor={"type": "stripe", "id": event.id},
            audit_actor=system_actor("stripe"),
        )
        outcome = "plan_changed" if target.value != org.plan else "plan_unchanged"

    await session.execute(
        pg_insert(StripeSubscription)
        .values(
            id=subscription_id,
            org_id=org.id,
            customer_id=_id_of(subscription.get("customer")),
            status=status,
            plan=granted.value if granted else None,
            last_event_created=event.created,
        )
        .on_conflict_do_update(
            index_elements=[StripeSubscription.id],
            set_={
                "org_id": org.id,
                "customer_id": _id_of(subscription.get("customer")),
                "status": status,
                "plan": granted.value if granted else None,
                "last_event_created": event.created,
                "updated_at": utcnow(),
            },
        )
    )
    return outcome


# ---- re-drive ------------------------------------------------------------------------------


async def redrive_pending(
    engine: AsyncEngine, *, older_than: timedelta = timedelta(seconds=30), limit: int = 500
) -> int:
    """Apply stored events that no message applied (Redis down, worker lost), oldest
    ``created`` first; forget processed events after 30 days. Returns how many it applied."""
    cutoff = utcnow() - older_than
    async with shared_session(engine) as session:
        pending = list(
            await session.scalars(
                select(StripeEvent.id)
                .where(StripeEvent.processed_at.is_(None), StripeEvent.received_at <= cutoff)
                .order_by(StripeEvent.created, StripeEvent.id)
                .limit(limit)
            )
        )
    applied = 0
    for event_id in pending:
        try:
            await apply_event(engine, event_id)
            applied += 1
        except Exception:
            # One failing event must not hold back the others; the next run retries it.
            log.warning("stripe_event_redrive_failed", event_id=event_id, exc_info=True)
    async with shared_session(engine) as session, session.begin():
        await session.execute(
            delete(StripeEvent).where(StripeEvent.processed_at < utcnow() - KEEP_PROCESSED)
        )
    return applied
