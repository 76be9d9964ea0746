"""HTTP routes of drafts, their review and revision diffs (issue 30), under
``/questions/{idOrSlug}``."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from quart import Blueprint, request
from quart_schema import (
    RequestSchemaValidationError,
    document_request,
    document_response,
    validate_querystring,
    validate_request,
)

from api.http import conditional_locks as locks
from api.http.binding import current_org, db, requires_scope
from api.http.conditional import conditional
from api.questions import diff, drafts, review
from api.questions.draft_schemas import (
    DecisionBody,
    DiffOut,
    DiffQuery,
    DraftBody,
    DraftOut,
    PublishBody,
    ReviewRequestBody,
)
from api.questions.schemas import QuestionOut
from api.reviews.errors import DraftNotFound
from api.schemas import Envelope

question_drafts = Blueprint("question_drafts", __name__, url_prefix="/questions")
Result = tuple[dict[str, Any], int]
M = TypeVar("M", bound=BaseModel)


async def optional_body(model: type[M]) -> M:
    """The body as ``model``; no body at all is the model's defaults (errors as
    ``@validate_request`` renders them)."""
    raw = await request.get_data()
    if not raw.strip():
        return model()
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise RequestSchemaValidationError(error) from None
    if not isinstance(value, dict):
        raise RequestSchemaValidationError(TypeError("not an object"))
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise RequestSchemaValidationError(error) from None


@question_drafts.get("/<ref>/draft")
@requires_scope("read")
@document_response(Envelope[DraftOut])
async def get_draft(ref: str) -> Result:
    """The question's draft: its pending version (404 ``draft_not_found`` when none)."""
    return {"data": await drafts.get_draft(db(), ref)}, 200


@question_drafts.put("/<ref>/draft")
@requires_scope("write")
@validate_request(DraftBody)
@document_response(Envelope[DraftOut])
@conditional(locks.QUESTION, absent=(DraftNotFound,))
async def save_draft(ref: str, data: DraftBody) -> Result:
    """Save the pending version of the question, beside the live one.

    Any of title, answer, categoryId, slug, order, audiences; readers, the help center and
    webhooks keep the live one. A change clears approvals."""
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    return {"data": await drafts.save_draft(db(), current_org(), ref, changes)}, 200


@question_drafts.delete("/<ref>/draft")
@requires_scope("write")
@conditional(locks.QUESTION)
async def discard_draft(ref: str) -> tuple[str, int]:
    """Discard the draft."""
    await drafts.discard_draft(db(), current_org(), ref)
    return "", 204


@question_drafts.post("/<ref>/draft/publish")
@requires_scope("write")
@document_request(PublishBody)
@document_response(Envelope[QuestionOut])
async def publish_draft(ref: str) -> Result:
    """Publish the draft as one PATCH (one revision, the usual events) that also makes the
    question published: 200 with the question. With ``scheduledPublishAt``, the publish sweep
    does it then: 202 with the draft. 409 ``draft_conflict`` (both versions in the error)
    when the question changed after the draft was started, unless ``force``; 403
    ``review_required`` when review is required and the draft is not approved as it is."""
    body = await optional_body(PublishBody)
    kind, result = await drafts.publish_draft(
        db(), current_org(), ref, force=body.force, at=body.scheduled_publish_at
    )
    return {"data": result}, 200 if kind == "question" else 202


@question_drafts.post("/<ref>/draft/review")
@requires_scope("write")
@document_request(ReviewRequestBody)
@document_response(Envelope[DraftOut])
async def request_review(ref: str) -> Result:
    """Ask for review of the draft, optionally of some members (``reviewerIds``)."""
    body = await optional_body(ReviewRequestBody)
    return {"data": await review.request_review(db(), current_org(), ref, body.reviewer_ids)}, 200


@question_drafts.post("/<ref>/draft/approve")
@requires_scope("review")
@document_request(DecisionBody)
@document_response(Envelope[DraftOut])
async def approve_draft(ref: str) -> Result:
    """Approve the draft as it is (a member's key with the review scope; never its last
    author: 403 ``self_approval``)."""
    body = await optional_body(DecisionBody)
    result = await review.decide(
        db(), current_org(), ref, approve=True, comment=body.comment, version=body.version
    )
    return {"data": result}, 200


@question_drafts.post("/<ref>/draft/reject")
@requires_scope("review")
@document_request(DecisionBody)
@document_response(Envelope[DraftOut])
async def reject_draft(ref: str) -> Result:
    """Reject the draft, with a comment for its author."""
    body = await optional_body(DecisionBody)
    result = await review.decide(
        db(), current_org(), ref, approve=False, comment=body.comment, version=body.version
    )
    return {"data": result}, 200


@question_drafts.get("/<ref>/revisions/<revision_id>/diff")
@requires_scope("read")
@validate_querystring(DiffQuery)
@document_response(Envelope[DiffOut])
async def revision_diff(ref: str, revision_id: str, query_args: DiffQuery) -> Result:
    """A word-level diff of title and answer from a revision to ``against``: ``live``
    (default), ``draft`` or another revision id of the question."""
    return {"data": await diff.revision_diff(db(), ref, revision_id, query_args.against)}, 200
