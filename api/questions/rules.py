"""Rules of questions shared by the reads, the writes and the sweep (SPEC "Questions", CONTRACT
section 5): which rows are live (``LIVE``), the slug rule (``SLUGS``), the status machine
(``state_on_create``, ``state_on_update``), the PATCH field map (``COLUMNS``, ``NOT_NULL``,
``check_not_null``) and the resolution of a ``categoryId`` (``category_id``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.errors import CategoryReferenceNotFound, ValidationFailed, field_error
from api.questions.models import Question
from api.questions.schemas import SLUG_MAX
from api.slugs import SlugRule
from tenancy.ids import looks_like_id

LIVE = Question.deleted_at.is_(None)
# CONTRACT section 8: only `reorder` is an operation under /questions.
SLUGS = SlugRule(Question, LIVE, SLUG_MAX, frozenset({"reorder"}), "uq_questions_slug_live")
PUBLISHED = "published"
SCHEDULED = "scheduled"
DRAFT = "draft"
ARCHIVED = "archived"

# The fields a PATCH may send (client names) and their columns; those that may not be null.
COLUMNS = {
    "title": "title",
    "answer": "answer",
    "categoryId": "category_id",
    "status": "status",
    "slug": "slug",
    "order": "sort_order",
    "scheduledPublishAt": "scheduled_publish_at",
    "publishedAt": "published_at",
    "audiences": "audiences",
}
NOT_NULL = ("title", "answer", "categoryId", "status", "slug", "order", "audiences")


def check_not_null(changes: dict[str, Any]) -> None:
    """Refuse a PATCH that sends null for a field that may not be null."""
    for field in NOT_NULL:
        if field in changes and changes[field] is None:
            raise ValidationFailed(details=field_error(field, "must not be null"))


def category_ref(value: Any, by_id: bool) -> ColumnElement[bool]:
    """The live category a question body's ``categoryId`` names (``value``, or a parameter
    for it): by id, else (issue 41: as every other reference) by slug."""
    column = Category.id if by_id else Category.slug
    return and_(column == value, Category.deleted_at.is_(None))


async def category_id(session: AsyncSession, ref: str) -> str:
    """A live category of the org (by id or slug), locked against a concurrent delete: ``FOR
    KEY SHARE``, which other creates and PATCHes into it share (they do not queue behind each
    other) and which a category delete or merge waits for (they take ``FOR UPDATE`` first)."""
    found = (
        await session.execute(
            select(Category.id)
            .where(category_ref(ref, looks_like_id(ref, "cat")))
            .with_for_update(read=True, key_share=True)
        )
    ).scalar_one_or_none()
    if found is None:
        raise CategoryReferenceNotFound(
            "The category does not exist in this organization.",
            details=field_error("categoryId", "not found"),
        )
    return found


# ---- the status machine --------------------------------------------------------------------


def _not_with_schedule(status: str) -> ValidationFailed:
    return ValidationFailed(
        f"A {status} question cannot have scheduledPublishAt.",
        details=field_error("scheduledPublishAt", f"must be null when status is {status}"),
    )


def _needs_schedule() -> ValidationFailed:
    return ValidationFailed(
        "A scheduled question needs scheduledPublishAt.",
        details=field_error("scheduledPublishAt", "required when status is scheduled"),
    )


def state_on_create(status: str, at: datetime | None) -> tuple[str, datetime | None]:
    """The status and scheduled time a create stores: a draft sent with a time is scheduled."""
    if status in (PUBLISHED, ARCHIVED):
        if at is not None:
            raise _not_with_schedule(status)
        return status, None
    if status == SCHEDULED and at is None:
        raise _needs_schedule()
    return (SCHEDULED, at) if at is not None else (DRAFT, None)


# ``scheduledPublishAt`` absent from a PATCH (null is a value: it unschedules).
UNSET: Any = object()


def state_on_update(
    current_status: str, current_at: datetime | None, status: str | None, at: Any
) -> tuple[str, datetime | None]:
    """CONTRACT section 5. A status sent is the state the question moves to (SPEC); a draft
    sent with a time is scheduled; without ``status``, a time schedules a draft and null
    unschedules."""
    if status is not None:
        if status == SCHEDULED:
            when = current_at if at is UNSET else at
            if when is None:
                raise _needs_schedule()
            return SCHEDULED, when
        if status in (PUBLISHED, ARCHIVED):
            if at is not UNSET and at is not None:
                raise _not_with_schedule(status)
            return status, None
        # draft
        when = None if at is UNSET else at
        return (SCHEDULED, when) if when is not None else (DRAFT, None)
    if at is UNSET:
        return current_status, current_at
    if at is None:
        return (DRAFT if current_status == SCHEDULED else current_status), None
    if current_status in (PUBLISHED, ARCHIVED):
        raise _not_with_schedule(current_status)
    return SCHEDULED, at
