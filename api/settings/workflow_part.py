"""The ``workflow`` part of ``/settings`` (issue 30): ``{"requireReview": bool}``, the very
setting ``/settings/workflow`` shows and changes (``api.reviews.workflow``: one row, PRO to
turn on, audited as a settings change of its own)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationFailed, field_error
from api.reviews import workflow
from api.settings.schemas import SettingsUpdate
from tenancy.principal import Principal

FIELD = "workflow"


def changes_of(data: SettingsUpdate) -> dict[str, Any] | None:
    """The workflow fields the PATCH sends (None: no ``workflow``); null is refused."""
    if FIELD not in data.model_fields_set:
        return None
    if data.workflow is None:
        raise ValidationFailed(details=field_error(FIELD, "must not be null"))
    changes: dict[str, Any] = data.workflow.model_dump(by_alias=True, exclude_unset=True)
    if "requireReview" in changes and changes["requireReview"] is None:
        raise ValidationFailed(details=field_error(f"{FIELD}.requireReview", "must not be null"))
    return changes


async def with_workflow(
    session: AsyncSession,
    org: Principal,
    settings: dict[str, Any],
    changes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``settings`` with the workflow, changed first by ``changes`` when given."""
    if changes:
        flow = await workflow.update_workflow(session, org, changes)
    else:
        flow = await workflow.get_workflow(session)
    return {**settings, FIELD: flow}
