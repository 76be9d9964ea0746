"""``create_draft``: what an assistant proposes, for the org's review (never published by the
tool): a new question, created with status ``draft`` through the API's own create (events,
audit, caps); or a new version of an existing question, saved as its draft
(``api.questions.drafts``, issue 30: the live version stays until the draft is published).
A question that already has a draft keeps it: the tool never replaces someone's draft."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from api.categories import queries as categories
from api.errors import CategoryNotFound, ValidationFailed, field_error
from api.helpcenter import content
from api.questions.drafts import find_draft, save_draft
from api.questions.queries import load
from api.questions.schemas import QuestionCreate
from api.questions.service import create_question
from tenancy.principal import Principal


async def _category_id(session: AsyncSession, org: Principal, ref: str | None) -> str:
    if ref is not None:
        try:
            found = await categories.get_category(session, ref, org.default_locale)
        except CategoryNotFound:
            raise ValidationFailed(
                "No such category in this FAQ (list_categories names them).",
                details=field_error("category", "not found"),
            ) from None
        return str(found["id"])
    items = await content.all_categories(session, org.default_locale)
    return next(str(c["id"]) for c in items if c["isDefault"])


class DraftExists(ValidationFailed):
    pass


async def revise(
    session: AsyncSession,
    org: Principal,
    ref: str,
    title: str | None,
    answer: str,
    category: str | None,
    audiences: list[str] | None = None,
) -> dict[str, Any]:
    """The draft of question ``ref`` as ``GET …/draft`` returns it. The caller commits."""
    question = await load(session, ref, lock=True)
    if await find_draft(session, question.id) is not None:
        raise DraftExists(
            "This question already has a draft waiting for review; it was left as it is.",
            details=field_error("idOrSlug", "already has a draft"),
        )
    changes: dict[str, Any] = {"answer": answer}
    if title is not None:
        changes["title"] = title
    if category is not None:
        changes["categoryId"] = await _category_id(session, org, category)
    if audiences is not None:
        changes["audiences"] = audiences  # checked by the draft's own rules (save_draft)
    return await save_draft(session, org, question.id, changes)


async def create_draft(
    session: AsyncSession,
    org: Principal,
    title: str,
    answer: str,
    category: str | None,
    audiences: list[str] | None = None,
) -> dict[str, Any]:
    """The new draft question as GET returns it. The caller commits."""
    body = QuestionCreate.model_validate(
        {
            "title": title,
            "answer": answer,
            "categoryId": await _category_id(session, org, category),
            "status": "draft",
            "audiences": audiences or [],
        }
    )
    created = await create_question(session, org, body)
    data: dict[str, Any] = created.body["data"]
    return data
