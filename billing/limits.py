"""Cap checks at create time, safe under concurrent creates. Plans come in by name (the
org's stored plan); the caller passes the usage count."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from billing.errors import PlanLimitReached, PlanRequired
from billing.plans import Plan, allows_webhooks, cap_allows, cap_of

Resource = Literal["categories", "questions", "webhooks", "audiences"]


async def ensure_room(
    session: AsyncSession,
    org_id: str,
    plan: str,
    resource: Resource,
    count: Callable[[], Awaitable[int]],
) -> None:
    """Refuse a create past the plan's cap (402). Creates of one resource in one org are
    serialized by a transaction advisory lock, so concurrent creates never pass the cap."""
    cap = cap_of(Plan(plan), resource)
    if cap is None:
        return
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"cap:{org_id}:{resource}"},
    )
    if not cap_allows(cap, await count()):
        raise PlanLimitReached(f"The {plan} plan allows {cap} {resource}; upgrade to create more.")


async def ensure_within_cap(
    session: AsyncSession,
    org_id: str,
    plan: str,
    resource: Resource,
    count: Callable[[], Awaitable[int]],
) -> None:
    """Refuse a create past the plan's cap (402), checked AFTER the caller inserted the row:
    ``count`` includes it. Call it as the last statement before the commit. The transaction
    advisory lock of ``ensure_room`` is taken here, so creates of one resource in one org
    queue only for the count and the COMMIT, not for their whole transaction; the count runs
    after the lock was granted (its own statement: READ COMMITTED takes its snapshot then),
    so it sees every create that held the lock before, and concurrent creates never pass the
    cap. A refused create's rollback removes its row."""
    cap = cap_of(Plan(plan), resource)
    if cap is None:
        return
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"cap:{org_id}:{resource}"},
    )
    if await count() > cap:
        raise PlanLimitReached(f"The {plan} plan allows {cap} {resource}; upgrade to create more.")


def ensure_webhooks_allowed(plan: str) -> None:
    """The STARTER gate on webhook creation (403 ``plan_required``)."""
    if not allows_webhooks(Plan(plan)):
        raise PlanRequired()
