"""Which categories readers see (issue 41): those holding a published question themselves or
in a sub-category at any depth. An empty category, the automatic "Uncategorized" among them,
is hidden at every depth. One rule for every reader's door: the help center's pages, MCP's
``list_categories`` for a publishable key, ``llms.txt``. Issue 39: of what the reader's
audiences allow only (``api.audiences.visibility``): a restricted category, or one whose
questions are all restricted, is hidden like an empty one."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.visibility import Audiences, question_visible
from api.categories import queries
from api.questions.models import Question
from api.questions.rules import LIVE

PUBLISHED = "published"
MAX_CATEGORIES = 500  # read at once (the help center's bound too)


async def with_published_questions(session: AsyncSession, audiences: Audiences = ()) -> set[str]:
    """The ids of the categories holding a published question directly, one readers of
    ``audiences`` may read (None: any)."""
    stmt = (
        select(Question.category_id)
        .where(LIVE, Question.status == PUBLISHED, question_visible(audiences))
        .distinct()
    )
    return set((await session.execute(stmt)).scalars())


def visible(items: list[dict[str, Any]], with_questions: set[str]) -> list[dict[str, Any]]:
    """The categories of ``items`` (their order kept) that hold a published question
    themselves or in a sub-category at any depth (``with_questions``: the ids of those
    holding one directly)."""
    by_id = {c["id"]: c for c in items}
    shown: set[str] = set()
    for category_id in with_questions:
        seen: set[str] = set()
        current: str = category_id
        while current in by_id and current not in seen and current not in shown:
            seen.add(current)
            shown.add(current)
            current = by_id[current]["parentId"] or ""
    return [c for c in items if c["id"] in shown]


async def visible_categories(
    session: AsyncSession, locale: str, audiences: Audiences = ()
) -> list[dict[str, Any]]:
    """The categories readers of ``audiences`` see (the anonymous reader's by default),
    served in ``locale``, in the help center's order, each with its count of the published
    questions they may read (``questionCount``, its own)."""
    items, _ = await queries.list_categories(
        session,
        limit=MAX_CATEGORIES,
        after=None,
        q=None,
        locale=locale,
        published_only=True,
        audiences=audiences,
    )
    return visible(items, await with_published_questions(session, audiences))
