"""The org's workflow setting ``requireReview`` (issue 30; PRO and above), kept in the org's
schema and read by every write that could publish."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationFailed, field_error
from api.reviews.models import WorkflowSettings
from billing.errors import PlanRequired
from billing.plans import Plan, allows_review
from tenancy.audit import audit_settings
from tenancy.clock import utcnow
from tenancy.principal import Principal
from tenancy.transactions import per_transaction

FIELD = "workflow"  # in the settings audit entry


_CACHED = "workflow.require_review"


# The setting as a column of another statement (``note_require_review`` keeps what it read).
REQUIRE_REVIEW = func.coalesce(
    select(WorkflowSettings.require_review).scalar_subquery(), False
).label("require_review")


async def require_review(session: AsyncSession) -> bool:
    """The org's ``requireReview``, read once per transaction (an import's batch asks for
    every item; ``update_workflow`` keeps it current)."""
    held = per_transaction(session, _CACHED, dict[str, bool])
    if "value" in held:
        return held["value"]
    value = bool(await session.scalar(select(WorkflowSettings.require_review)))
    note_require_review(session, value)  # in the transaction the read began
    return value


def note_require_review(session: AsyncSession, value: bool) -> None:
    """``requireReview`` as a statement of this transaction read it (``REQUIRE_REVIEW``): a
    create reads it with its category, no round trip of its own."""
    per_transaction(session, _CACHED, dict[str, bool])["value"] = bool(value)


async def get_workflow(session: AsyncSession) -> dict[str, Any]:
    return {"requireReview": await require_review(session)}


async def update_workflow(session: AsyncSession, org: Principal, changes: Any) -> dict[str, Any]:
    """PATCH ``{"requireReview": bool}``; turning it on needs PRO (403 ``plan_required``);
    turning it off is always allowed (after a downgrade too)."""
    value = changes.get("requireReview")
    if "requireReview" in changes and value is None:
        raise ValidationFailed(details=field_error("requireReview", "must not be null"))
    if value is None:
        return await get_workflow(session)
    before = await get_workflow(session)
    if value and not allows_review(Plan(org.plan)):
        raise PlanRequired("Review before publishing requires the PRO plan or above.")
    if before["requireReview"] == value:
        return before
    await session.execute(
        insert(WorkflowSettings)
        .values(id=True, require_review=value, updated_at=utcnow())
        .on_conflict_do_update(
            index_elements=[WorkflowSettings.id],
            set_={"require_review": value, "updated_at": utcnow()},
        )
    )
    note_require_review(session, value)
    after = {"requireReview": value}
    await audit_settings(session, org.id, org.actor, {FIELD: before}, {FIELD: after})
    return after
