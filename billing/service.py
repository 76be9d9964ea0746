"""Billing of one org: plan, caps and usage; starting a checkout; opening the portal.

Reads the org's row directly (not the per-process cache), so it shows a plan change at once.
Usage is counted by the caller (the API knows its resources) and passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from billing.checkout import StripeGateway
from billing.errors import NoStripeCustomer, SubscriptionExists
from billing.models import StripeSubscription
from billing.plans import Plan, caps_for
from billing.stripe_events import LIVE_STATUSES
from tenancy.models import Organization


@dataclass(frozen=True)
class Usage:
    categories: int  # live (not deleted)
    questions: int
    webhooks: int = 0  # live (not deleted; inactive ones count)
    locales: int = 1  # enabled, the default included


async def _org_row(session: AsyncSession, org_id: str) -> tuple[Plan, str | None]:
    row = (
        await session.execute(
            select(Organization.plan, Organization.stripe_customer_id).where(
                Organization.id == org_id
            )
        )
    ).one()
    return Plan(row.plan), row.stripe_customer_id


async def billing_summary(session: AsyncSession, org_id: str, usage: Usage) -> dict[str, Any]:
    plan, customer_id = await _org_row(session, org_id)
    caps = caps_for(plan)
    status = await session.scalar(
        select(StripeSubscription.status)
        .where(StripeSubscription.org_id == org_id)
        .order_by(StripeSubscription.last_event_created.desc())
        .limit(1)
    )
    return {
        "plan": plan.value,
        "caps": {
            "categories": caps.categories,
            "questions": caps.questions,
            "webhooks": caps.webhooks,
            "webhookLimit": caps.webhook_limit,
            "locales": caps.locales,
        },
        "usage": {
            "categories": usage.categories,
            "questions": usage.questions,
            "webhooks": usage.webhooks,
            "locales": usage.locales,
        },
        "customerLinked": customer_id is not None,
        "subscriptionStatus": status,
    }


async def start_checkout(
    session: AsyncSession, org_id: str, org_slug: str, plan: Plan, gateway: StripeGateway
) -> str:
    """A Checkout Session URL for ``plan``. An org that still has a subscription changes it
    in the portal instead: a second subscription would bill it twice."""
    _, customer_id = await _org_row(session, org_id)
    live = await session.scalar(
        select(StripeSubscription.id)
        .where(StripeSubscription.org_id == org_id, StripeSubscription.status.in_(LIVE_STATUSES))
        .limit(1)
    )
    if live is not None:
        raise SubscriptionExists()
    return await gateway.checkout_url(
        org_id=org_id, org_slug=org_slug, plan=plan, customer_id=customer_id
    )


async def open_portal(session: AsyncSession, org_id: str, gateway: StripeGateway) -> str:
    _, customer_id = await _org_row(session, org_id)
    if customer_id is None:
        raise NoStripeCustomer()
    return await gateway.portal_url(org_id=org_id, customer_id=customer_id)
