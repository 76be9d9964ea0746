"""``/api/v1/{org}/settings/workflow``: the org's ``requireReview`` setting (issue 30), a
resource of its own, also the ``workflow`` part of ``/settings``
(``api.settings.workflow_part``)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_request

from api.http import conditional_locks as locks
from api.http.binding import current_org, db, requires_scope
from api.http.conditional import conditional
from api.reviews import workflow
from api.schemas import Envelope
from api.settings.schemas import WorkflowOut, WorkflowPatch

workflow_settings = Blueprint("workflow_settings", __name__, url_prefix="/settings/workflow")


# The same models as the ``workflow`` part of ``/settings`` (one setting, one shape).
@workflow_settings.get("")
@requires_scope("read")
@document_response(Envelope[WorkflowOut])
async def get_workflow() -> tuple[dict[str, Any], int]:
    """The organization's publishing workflow (``requireReview``, off by default)."""
    return {"data": await workflow.get_workflow(db())}, 200


@workflow_settings.patch("")
@requires_scope("admin")
@validate_request(WorkflowPatch)
@document_response(Envelope[WorkflowOut])
@conditional(locks.SETTINGS)
async def update_workflow(data: WorkflowPatch) -> tuple[dict[str, Any], int]:
    """Turn review before publishing on or off. On needs the PRO plan or above (403
    ``plan_required``); off is always allowed."""
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    return {"data": await workflow.update_workflow(db(), current_org(), changes)}, 200
