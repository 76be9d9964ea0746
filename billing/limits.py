"""Cap checks at create time, safe under concurrent creates."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import PlanLimitReached, PlanRequired
from billing.plans import Plan, allows_webhooks, cap_allows, caps_for

Resource = Literal["categories", "questions"]


async def ensure_room(
    session: AsyncSession,
    org_id: str,
    plan: Plan,
    resource: Resource,
    count: Callable[[], Awaitable[int]],
) -> None:
    """Refuse a create past the plan's cap (402). Creates of one resource in one org are
    serialized by a transaction advisory lock, so concurrent creates never pass the cap."""
    cap = getattr(caps_for(plan), resource)
    if cap is None:
        return
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"cap:{org_id}:{resource}"},
    )
    if not cap_allows(cap, await count()):
        raise PlanLimitReached(
            f"The {plan.value} plan allows {cap} {resource}; upgrade to create more."
        )


def ensure_webhooks_allowed(plan: Plan) -> None:
    """The STARTER gate on webhook creation (403 ``plan_required``)."""
    if not allows_webhooks(plan):
        raise PlanRequired()
