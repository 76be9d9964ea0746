"""Request and response models of drafts, reviews and diffs (issue 30)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from api.questions.schemas import Answer, CategoryRef, Order, Slug, Title
from api.schemas import AudienceList, QueryArgs, RequestBody, ResponseModel, Timestamp

MemberId = Annotated[str, Field(min_length=1, max_length=40)]
ReviewState = Literal["pending", "approved", "rejected"]


class DraftBody(RequestBody):
    """The pending version: any of these fields (the draft becomes exactly what is sent)."""

    title: Title | None = None
    answer: Answer | None = None
    category_id: CategoryRef | None = None
    slug: Slug | None = None
    order: Order | None = None
    audiences: AudienceList | None = None  # audience slugs (issue 39); empty: everyone


class PublishBody(RequestBody):
    force: bool = False  # publish although the question changed after the draft was started
    scheduled_publish_at: Timestamp | None = None  # the publish sweep publishes it then


class ReviewRequestBody(RequestBody):
    reviewer_ids: list[MemberId] = Field(default_factory=list, max_length=20)


class DecisionBody(RequestBody):
    comment: Annotated[str, Field(max_length=5000)] | None = None
    version: int | None = None  # the draft version read: 409 draft_changed if it moved on


class DiffQuery(QueryArgs):
    against: Annotated[str, Field(min_length=1, max_length=40)] = "live"  # live|draft|rev_…


class ReviewListQuery(QueryArgs):
    state: ReviewState = "pending"
    reviewer: MemberId | None = None
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)


class Decision(ResponseModel):
    by: dict[str, str]  # the member's actor
    comment: str | None


class DraftOut(ResponseModel):
    question_id: str
    title: str  # the pending version: the live value where the draft does not change it
    answer: str
    category_id: str
    slug: str
    order: int
    audiences: list[str]
    changed_fields: list[str]
    version: int  # grows with every change; an approval is of one version
    review_state: ReviewState | None
    reviewer_ids: list[str]
    decision: Decision | None
    approved_version: int | None
    scheduled_publish_at: str | None
    created_at: str
    updated_at: str
    updated_by: dict[str, str]  # the actor of the last change


class DiffPiece(ResponseModel):
    op: Literal["equal", "delete", "insert"]
    text: str


class DiffOut(ResponseModel):
    revision_id: str
    against: str
    title: list[DiffPiece]
    answer: list[DiffPiece]
