"""A reader's vote on a published question by its id or slug (the widget's door,
``api.helpcenter.widget_votes``); no Quart. The help center's form finds its question by the
slug of its page (``visitors.published_question_id``)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.visibility import Audiences, question_visible
from api.errors import QuestionNotFound
from api.helpcenter.visitors import record_vote
from api.questions.models import Question
from api.questions.rules import LIVE, PUBLISHED
from tenancy.ids import looks_like_id


async def vote_on_published(
    session: AsyncSession,
    ref: str,
    *,
    visitor: str,
    helpful: bool,
    reason: str | None,
    locale: str,
    audiences: Audiences = (),
) -> str:
    """Record the vote (``record_vote``: a second one replaces the first) and return the
    question's id; ``QuestionNotFound`` when no live, published question has that id or
    slug that readers of ``audiences`` may read (a reader sees no other; issue 39)."""
    reference = Question.id == ref if looks_like_id(ref, "q") else Question.slug == ref
    readable = (Question.status == PUBLISHED, question_visible(audiences))
    stmt = select(Question.id).where(LIVE, reference, *readable)
    question_id = (await session.execute(stmt)).scalar_one_or_none()
    if question_id is None:
        raise QuestionNotFound()
    await record_vote(
        session,
        question_id=question_id,
        visitor=visitor,
        helpful=helpful,
        reason=None if helpful else reason,
        locale=locale,
    )
    return str(question_id)
