"""Applying stored Stripe events (the function the ``billing.apply_stripe_event`` actor runs):
each handled type, every status mapping, once per event id, and Stripe's ``created`` order."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.models import StripeEvent, StripeSubscription
from billing.plans import Plan
from billing.stripe_events import apply_event, redrive_pending
from tenancy.audit import AuditEntry
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.orgs import set_plan
from tests.billing.conftest import (
    StripeSender,
    checkout_completed,
    subscription_event,
    unique,
)
from tests.fixtures.orgs import OrgClient


async def plan_of(org: OrgClient) -> str:
    """The plan as the API reports it on the next request."""
    response = await org.get("/billing", scope="read")
    assert response.status_code == 200
    plan: str = (await response.get_json())["data"]["plan"]
    return plan


async def customer_of(engine: AsyncEngine, org: OrgClient) -> str | None:
    async with shared_session(engine) as session:
        return await session.scalar(
            select(Organization.stripe_customer_id).where(Organization.id == org.info.id)
        )


async def plan_audit(engine: AsyncEngine, org: OrgClient) -> list[AuditEntry]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.scalars(
            select(AuditEntry)
            .where(AuditEntry.resource_type == "organization", AuditEntry.action == "plan_changed")
            .order_by(AuditEntry.created_at)
        )
        return list(rows)


# ---- checkout.session.completed ------------------------------------------------------------


async def test_checkout_completed_links_the_customer_to_the_org(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any
) -> None:
    free, other = await org_factory(Plan.FREE), await org_factory(Plan.FREE)
    customer = unique("cus")
    assert await stripe_events.deliver(checkout_completed(free.slug, customer)) == (
        "customer_linked"
    )
    assert await customer_of(engine, free) == customer
    assert await customer_of(engine, other) is None
    summary = (await (await free.get("/billing", scope="read")).get_json())["data"]
    assert summary["customerLinked"] is True
    # Linking alone changes no plan: the subscription event does.
    assert summary["plan"] == "FREE"


async def test_checkout_for_an_unknown_org_changes_nothing(
    stripe_events: StripeSender, engine: AsyncEngine, org: OrgClient
) -> None:
    customer = unique("cus")
    assert await stripe_events.deliver(checkout_completed("no-such-org-x", customer)) == (
        "org_unknown"
    )
    async with shared_session(engine) as session:
        holder = await session.scalar(
            select(Organization.id).where(Organization.stripe_customer_id == customer)
        )
    assert holder is None


async def test_a_customer_linked_to_one_org_is_not_taken_by_another(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any
) -> None:
    first, second = await org_factory(Plan.FREE), await org_factory(Plan.FREE)
    customer = unique("cus")
    await stripe_events.deliver(checkout_completed(first.slug, customer))
    outcome = await stripe_events.deliver(checkout_completed(second.slug, customer))
    assert outcome == "customer_linked_elsewhere"
    assert await customer_of(engine, first) == customer
    assert await customer_of(engine, second) is None


# ---- customer.subscription.* ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("lookup_key", "plan"), [("starter", "STARTER"), ("pro", "PRO"), ("enterprise", "ENTERPRISE")]
)
async def test_subscription_created_sets_the_plan_of_the_price_lookup_key(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any, lookup_key: str, plan: str
) -> None:
    free = await org_factory(Plan.FREE)
    body = subscription_event("created", unique("sub"), lookup_key=lookup_key, org=free.slug)
    assert await stripe_events.deliver(body) == "plan_changed"
    assert await plan_of(free) == plan
    # Through set_plan: audited in the org, with the Stripe event as the actor.
    [entry] = await plan_audit(engine, free)
    assert entry.actor == {"type": "stripe", "id": body["id"]}
    assert (entry.before, entry.after) == ({"plan": "FREE"}, {"plan": plan})


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("active", "ENTERPRISE"),
        ("trialing", "ENTERPRISE"),
        ("past_due", "PRO"),  # unchanged
        ("incomplete", "PRO"),  # unchanged (first payment still pending)
        ("canceled", "FREE"),
        ("unpaid", "FREE"),
        ("incomplete_expired", "FREE"),
    ],
)
async def test_subscription_updated_maps_every_status(
    stripe_events: StripeSender, org_factory: Any, status: str, expected: str
) -> None:
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    start = int(time.time()) - 60
    await stripe_events.deliver(
        subscription_event("created", subscription, lookup_key="pro", org=org.slug, created=start)
    )
    assert await plan_of(org) == "PRO"
    updated = subscription_event(
        "updated",
        subscription,
        status=status,
        lookup_key="enterprise",
        org=org.slug,
        created=start + 10,
    )
    await stripe_events.deliver(updated)
    assert await plan_of(org) == expected


async def test_subscription_deleted_returns_the_org_to_free(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    start = int(time.time()) - 60
    await stripe_events.deliver(
        subscription_event("created", subscription, lookup_key="pro", org=org.slug, created=start)
    )
    assert await plan_of(org) == "PRO"
    # Stripe sends the subscription as it was; deleted means FREE whatever its status says.
    deleted = subscription_event(
        "deleted", subscription, status="active", org=org.slug, created=start + 5
    )
    assert await stripe_events.deliver(deleted) == "plan_changed"
    assert await plan_of(org) == "FREE"


async def test_past_due_on_a_new_subscription_leaves_the_plan_alone(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org = await org_factory(Plan.STARTER)
    body = subscription_event("created", unique("sub"), status="past_due", org=org.slug)
    assert await stripe_events.deliver(body) == "plan_unchanged"
    assert await plan_of(org) == "STARTER"


async def test_the_org_comes_from_the_linked_customer_without_metadata(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org = await org_factory(Plan.FREE)
    customer = unique("cus")
    await stripe_events.deliver(checkout_completed(org.slug, customer))
    body = subscription_event("created", unique("sub"), lookup_key="starter", customer=customer)
    assert await stripe_events.deliver(body) == "plan_changed"
    assert await plan_of(org) == "STARTER"


async def test_a_subscription_of_no_known_org_changes_nothing(
    stripe_events: StripeSender, engine: AsyncEngine
) -> None:
    subscription = unique("sub")
    body = subscription_event("created", subscription, customer=unique("cus"))
    assert await stripe_events.deliver(body) == "org_unknown"
    async with shared_session(engine) as session:
        assert await session.get(StripeSubscription, subscription) is None


async def test_an_unknown_price_lookup_key_leaves_the_plan_alone(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org = await org_factory(Plan.STARTER)
    body = subscription_event("created", unique("sub"), lookup_key="legacy-gold", org=org.slug)
    assert await stripe_events.deliver(body) == "price_unknown"
    assert await plan_of(org) == "STARTER"


async def test_a_duplicate_event_id_applies_once(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any
) -> None:
    org = await org_factory(Plan.FREE)
    body = subscription_event("created", unique("sub"), lookup_key="pro", org=org.slug)
    assert await stripe_events.deliver(body) == "plan_changed"
    # Ops move the org by hand; a re-delivery of the same event must not undo that.
    await set_plan(engine, org.slug, Plan.STARTER, actor={"type": "ops", "id": "cli"})
    assert await stripe_events.deliver(body) == "plan_changed"  # the first outcome, kept
    assert await apply_event(engine, body["id"]) == "plan_changed"
    assert await plan_of(org) == "STARTER"
    actors = [entry.actor for entry in await plan_audit(engine, org)]
    assert actors == [{"type": "stripe", "id": body["id"]}, {"type": "ops", "id": "cli"}]


async def test_an_older_event_after_a_newer_one_changes_nothing(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any
) -> None:
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    now = int(time.time())
    created = subscription_event(
        "created", subscription, lookup_key="pro", org=org.slug, created=now - 120
    )
    canceled = subscription_event(
        "updated", subscription, status="canceled", org=org.slug, created=now - 10
    )
    upgraded_late = subscription_event(
        "updated", subscription, lookup_key="enterprise", org=org.slug, created=now - 60
    )
    await stripe_events.deliver(created)
    await stripe_events.deliver(canceled)
    assert await plan_of(org) == "FREE"
    # Arrives last, but Stripe created it before the cancellation.
    assert await stripe_events.deliver(upgraded_late) == "stale"
    assert await plan_of(org) == "FREE"
    async with shared_session(engine) as session:
        record = await session.get(StripeSubscription, subscription)
    assert record is not None
    assert record.status == "canceled"
    assert int(record.last_event_created.timestamp()) == now - 10


async def test_the_end_of_one_subscription_keeps_the_plan_of_another_live_one(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org = await org_factory(Plan.FREE)
    old, new = unique("sub"), unique("sub")
    now = int(time.time())
    await stripe_events.deliver(
        subscription_event("created", old, lookup_key="starter", org=org.slug, created=now - 30)
    )
    await stripe_events.deliver(
        subscription_event("created", new, lookup_key="pro", org=org.slug, created=now - 20)
    )
    assert await plan_of(org) == "PRO"
    ended = subscription_event("deleted", old, status="canceled", org=org.slug, created=now)
    await stripe_events.deliver(ended)
    assert await plan_of(org) == "PRO"


async def test_the_redrive_applies_events_no_message_applied(
    stripe_events: StripeSender, org_factory: Any, deferred_apply: None
) -> None:
    """Stored but never applied (Redis lost the message, no worker ran): the periodic job
    applies it, in Stripe's ``created`` order."""
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    now = int(time.time())
    first = subscription_event(
        "created", subscription, lookup_key="pro", org=org.slug, created=now - 5
    )
    second = subscription_event(
        "updated", subscription, lookup_key="starter", org=org.slug, created=now
    )
    for body in (second, first):  # arrive out of order, neither applied yet
        assert (await stripe_events.post(body)).status_code == 200
    assert await plan_of(org) == "FREE"
    applied = await redrive_pending(stripe_events.engine, older_than=timedelta(0))
    assert applied >= 2
    assert await plan_of(org) == "STARTER"
    for body in (first, second):
        stored = await stripe_events.stored(body["id"])
        assert stored is not None and stored.processed_at is not None


async def test_concurrent_deliveries_and_applies_of_one_event_apply_it_once(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any
) -> None:
    """Stripe retries while the actor and the re-drive both run: still one plan change."""
    org = await org_factory(Plan.FREE)
    body = subscription_event("created", unique("sub"), lookup_key="enterprise", org=org.slug)
    responses = await asyncio.gather(*(stripe_events.post(body) for _ in range(5)))
    assert [r.status_code for r in responses] == [200] * 5
    outcomes = await asyncio.gather(*(apply_event(engine, body["id"]) for _ in range(5)))
    assert outcomes == ["plan_changed"] * 5
    assert await plan_of(org) == "ENTERPRISE"
    assert len(await plan_audit(engine, org)) == 1


async def test_events_applied_concurrently_end_in_the_state_of_the_newest(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any
) -> None:
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    now = int(time.time())
    bodies = [
        subscription_event(
            "created", subscription, lookup_key="starter", org=org.slug, created=now - 30
        ),
        subscription_event(
            "updated", subscription, lookup_key="pro", org=org.slug, created=now - 20
        ),
        subscription_event(
            "updated",
            subscription,
            status="past_due",
            lookup_key="pro",
            org=org.slug,
            created=now - 10,
        ),
        subscription_event(
            "updated", subscription, lookup_key="enterprise", org=org.slug, created=now
        ),
    ]
    for body in reversed(bodies):
        assert (await stripe_events.post(body)).status_code == 200
    await asyncio.gather(*(apply_event(engine, body["id"]) for body in reversed(bodies)))
    assert await plan_of(org) == "ENTERPRISE"


async def test_the_periodic_job_leaves_fresh_events_to_their_message(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any, deferred_apply: None
) -> None:
    """What ``faq jobs run stripe-events-redrive`` runs: events received in the last 30 s are
    left to the message sent with them; older unapplied ones are applied."""
    from tasks.billing import redrive_stripe_events
    from tasks.jobs import JOBS
    from tenancy.loop_resources import close_loop_resources

    assert JOBS["stripe-events-redrive"].run is redrive_stripe_events
    org = await org_factory(Plan.FREE)
    body = subscription_event("created", unique("sub"), lookup_key="starter", org=org.slug)
    assert (await stripe_events.post(body)).status_code == 200
    try:
        await redrive_stripe_events()
        stored = await stripe_events.stored(body["id"])
        assert stored is not None and stored.processed_at is None
        async with shared_session(engine) as session, session.begin():
            await session.execute(
                update(StripeEvent)
                .where(StripeEvent.id == body["id"])
                .values(received_at=StripeEvent.received_at - timedelta(minutes=1))
            )
        assert await redrive_stripe_events() >= 1
    finally:
        await close_loop_resources()
    assert await plan_of(org) == "STARTER"


# ---- ties and terminal states (issue 13) ---------------------------------------------------


async def _summary(org: OrgClient) -> dict[str, Any]:
    response = await org.get("/billing", scope="read")
    assert response.status_code == 200
    data: dict[str, Any] = (await response.get_json())["data"]
    return data


@pytest.mark.parametrize("order", ["deleted_then_updated", "updated_then_deleted"])
async def test_a_deletion_wins_a_tie_with_an_update_in_either_order(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any, order: str
) -> None:
    """Stripe's ``created`` has one-second resolution: a ``deleted`` and an ``updated``
    (``active``) of the same second may arrive in either order. A deleted subscription never
    comes back in Stripe, so the org ends on FREE (CONTRACT section 7) whatever the order."""
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    now = int(time.time())
    await stripe_events.deliver(
        subscription_event(
            "created", subscription, lookup_key="pro", org=org.slug, created=now - 60
        )
    )
    assert await plan_of(org) == "PRO"
    deleted = subscription_event(
        "deleted", subscription, status="canceled", org=org.slug, created=now
    )
    updated = subscription_event(
        "updated", subscription, lookup_key="enterprise", org=org.slug, created=now
    )
    bodies = [deleted, updated] if order == "deleted_then_updated" else [updated, deleted]
    for body in bodies:
        await stripe_events.deliver(body)
    summary = await _summary(org)
    assert summary["plan"] == "FREE"
    assert summary["subscriptionStatus"] == "canceled"
    async with shared_session(engine) as session:
        record = await session.get(StripeSubscription, subscription)
    assert record is not None
    assert (record.status, record.plan) == ("canceled", None)
    # One change to FREE is the last word in the org's audit log.
    assert (await plan_audit(engine, org))[-1].after == {"plan": "FREE"}


async def test_a_deleted_subscription_is_not_revived_by_a_later_event(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    """Stripe never reactivates a canceled subscription: an ``active`` event about it is
    out of date however it is stamped (clock skew, a resource snapshot taken earlier)."""
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    now = int(time.time())
    await stripe_events.deliver(
        subscription_event(
            "created", subscription, lookup_key="pro", org=org.slug, created=now - 60
        )
    )
    await stripe_events.deliver(
        subscription_event(
            "deleted", subscription, status="canceled", org=org.slug, created=now - 5
        )
    )
    late = subscription_event("updated", subscription, lookup_key="pro", org=org.slug, created=now)
    assert await stripe_events.deliver(late) == "subscription_ended"
    assert await plan_of(org) == "FREE"


async def test_a_deleted_subscription_no_longer_blocks_a_new_checkout(
    stripe_events: StripeSender, org_factory: Any, stripe_api: Any
) -> None:
    """The ``deleted`` event carries the subscription as it was (here still ``active``): the
    record must say it ended, or the org could never subscribe again (409
    ``subscription_exists``) and ``GET /billing`` would show an active subscription on FREE."""
    org = await org_factory(Plan.FREE)
    subscription = unique("sub")
    now = int(time.time())
    await stripe_events.deliver(
        subscription_event(
            "created", subscription, lookup_key="pro", org=org.slug, created=now - 60
        )
    )
    await stripe_events.deliver(
        subscription_event("deleted", subscription, status="active", org=org.slug, created=now)
    )
    summary = await _summary(org)
    assert (summary["plan"], summary["subscriptionStatus"]) == ("FREE", "canceled")
    response = await org.post("/billing/checkout", json={"plan": "pro"})
    assert response.status_code == 201, await response.get_data()
