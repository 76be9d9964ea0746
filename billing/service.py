"""Billing of one org: plan, caps and usage; starting a checkout; opening the portal.

Reads the org's row directly (not the per-process cache), so it shows a plan change at once.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.questions.models import Question
from billing.checkout import StripeGateway
from billing.errors import NoStripeCustomer, SubscriptionExists
from billing.models import StripeSubscription
from billing.plans import Plan, caps_for
from billing.stripe_events import LIVE_STATUSES
from tenancy.middleware import OrgContext
from tenancy.models import Organization


async def _org_row(session: AsyncSession, org: OrgContext) -> tuple[Plan, str | None]:
    row = (
        await session.execute(
            select(Organization.plan, Organization.stripe_customer_id).where(
                Organization.id == org.id
            )
        )
    ).one()
    return Plan(row.plan), row.stripe_customer_id


async def billing_summary(session: AsyncSession, org: OrgContext) -> dict[str, Any]:
    plan, customer_id = await _org_row(session, org)
    caps = caps_for(plan)
    categories = await session.scalar(
        select(func.count()).select_from(Category).where(Category.deleted_at.is_(None))
    )
    questions = await session.scalar(
        select(func.count()).select_from(Question).where(Question.deleted_at.is_(None))
    )
    status = await session.scalar(
        select(StripeSubscription.status)
        .where(StripeSubscription.org_id == org.id)
        .order_by(StripeSubscription.last_event_created.desc())
        .limit(1)
    )
    return {
        "plan": plan.value,
        "caps": {
            "categories": caps.categories,
            "questions": caps.questions,
            "webhooks": caps.webhooks,
        },
        "usage": {"categories": categories or 0, "questions": questions or 0},
        "customerLinked": customer_id is not None,
        "subscriptionStatus": status,
    }


async def start_checkout(
    session: AsyncSession, org: OrgContext, plan: Plan, gateway: StripeGateway
) -> str:
    """A Checkout Session URL for ``plan``. An org that still has a subscription changes it
    in the portal instead: a second subscription would bill it twice."""
    _, customer_id = await _org_row(session, org)
    live = await session.scalar(
        select(StripeSubscription.id)
        .where(StripeSubscription.org_id == org.id, StripeSubscription.status.in_(LIVE_STATUSES))
        .limit(1)
    )
    if live is not None:
        raise SubscriptionExists()
    return await gateway.checkout_url(
        org_id=org.id, org_slug=org.slug, plan=plan, customer_id=customer_id
    )


async def open_portal(session: AsyncSession, org: OrgContext, gateway: StripeGateway) -> str:
    _, customer_id = await _org_row(session, org)
    if customer_id is None:
        raise NoStripeCustomer()
    return await gateway.portal_url(org_id=org.id, customer_id=customer_id)
