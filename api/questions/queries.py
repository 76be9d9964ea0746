"""Reads of questions: one question (``get_question``), a page of questions (``list_questions``:
keyset pagination, ranked search with ``q``), a page of a question's revisions
(``list_revisions``), the live count (``count_live``) and loading a question by id or slug
(``load``, for the writes: it returns the ORM object). The question reads select the public
columns (``PUBLIC_COLUMNS``), not ORM objects.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Float, case, cast, func, literal, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.errors import QuestionNotFound, ValidationFailed, field_error
from api.pagination import keyset_page
from api.questions.models import Question, QuestionRevision
from api.questions.rules import LIVE
from api.questions.schemas import question_public, revision_public
from api.search import prefix_query, tsquery, unranked
from tenancy.ids import looks_like_id

# The columns of the public shape: reads select these rows, not ORM objects (no identity map,
# no search vector on the wire).
PUBLIC_COLUMNS: tuple[Any, ...] = (
    Question.id,
    Question.slug,
    Question.locale,
    Question.title,
    Question.answer,
    Question.status,
    Question.category_id,
    Question.sort_order,
    Question.published_at,
    Question.scheduled_publish_at,
    Question.created_at,
    Question.updated_at,
)


def _by_ref(ref: str) -> ColumnElement[bool]:
    return Question.id == ref if looks_like_id(ref, "q") else Question.slug == ref


async def load(session: AsyncSession, ref: str, *, lock: bool = False) -> Question:
    """The live question with this id or slug (row-locked with ``lock``), else 404."""
    stmt = select(Question).where(LIVE, _by_ref(ref))
    if lock:
        stmt = stmt.with_for_update()
    question = (await session.execute(stmt)).scalar_one_or_none()
    if question is None:
        raise QuestionNotFound()
    return question


async def count_live(session: AsyncSession) -> int:
    return (await session.execute(select(func.count()).where(LIVE))).scalar_one()


async def get_question(session: AsyncSession, ref: str) -> dict[str, Any]:
    row = (await session.execute(select(*PUBLIC_COLUMNS).where(LIVE, _by_ref(ref)))).first()
    if row is None:
        raise QuestionNotFound()
    return question_public(row)


def _category_filter(ref: str) -> ColumnElement[bool]:
    by_ref = Category.id == ref if looks_like_id(ref, "cat") else Category.slug == ref
    return Question.category_id.in_(
        select(Category.id).where(Category.deleted_at.is_(None), by_ref)
    )


def _title_only(query: str, joiner: str = " & ") -> str:
    """The same prefix query restricted to the title's lexemes (weight A): every word
    (``" & "``) or any word (``" | "``)."""
    return joiner.join(f"{term}A" for term in query.split(" & "))


# A one-letter search looks for its page among this many questions of the list first.
UNRANKED_WINDOW = 2_000


async def _unranked_rows(
    session: AsyncSession, stmt: Any, matches: ColumnElement[str], limit: int, after: Any
) -> list[Any]:
    """Up to ``limit + 1`` matches in the list's order, with bounded work either way: first
    among the next ``UNRANKED_WINDOW`` questions of the list (a dense match set fills the page
    there: an index walk of at most that many rows); when they hold too few matches, the rest
    come from the search index (then the match set is small: at most about
    ``limit / UNRANKED_WINDOW`` of the org), sorted. PostgreSQL over-estimates one-letter
    prefixes, so it would otherwise walk the whole list when a letter matches next to nothing.
    """
    hit = Question.search_vector.op("@@")(matches)
    key = tuple_(Question.sort_order, Question.id)
    listed = keyset_page(stmt, Question.sort_order, Question.id, after)
    bound = (
        await session.execute(
            listed.with_only_columns(Question.sort_order, Question.id)
            .offset(UNRANKED_WINDOW - 1)
            .limit(1)
        )
    ).first()
    # Not the bare column: the list index walks the window and checks each row (PostgreSQL
    # would otherwise build the search index's bitmap of every match of the letter first).
    near = listed.where(
        func.coalesce(Question.search_vector, Question.search_vector).op("@@")(matches)
    )
    if bound is not None:
        near = near.where(key <= tuple_(literal(bound.sort_order), literal(bound.id)))
    rows = list((await session.execute(near.limit(limit + 1))).all())
    if bound is None or len(rows) > limit:
        return rows
    beyond = stmt.where(hit, key > tuple_(literal(bound.sort_order), literal(bound.id)))
    # ``sort_order + 0``: not the list index's order, so the search index finds the few rows.
    beyond = beyond.order_by(Question.sort_order + 0, Question.id).limit(limit + 1 - len(rows))
    return rows + list((await session.execute(beyond)).all())


async def list_questions(
    session: AsyncSession,
    *,
    limit: int,
    after: list[Any] | None,
    q: str | None,
    category: str | None,
    status: str | None,
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """A page and the sort key of its last item when more follow (keyset pagination).

    With ``q``: every word must prefix-match; a question whose title holds every word ranks
    above one whose title holds some of them, which ranks above one that matches only through
    its answer; then ``ts_rank`` decides, then the id. A query of one-letter words only
    (``q=h``) matches nearly every question of a large org: its matches are not ranked but
    listed in the list's order, so PostgreSQL stops at the page's end (``unranked``).
    """
    stmt = select(*PUBLIC_COLUMNS).where(LIVE)
    if category is not None:
        stmt = stmt.where(_category_filter(category))
    if status is not None:
        stmt = stmt.where(Question.status == status)
    if q is not None:
        query = prefix_query(q)
        if query is None:
            return [], None
        matches = tsquery(query)
        if unranked(q):
            found = await _unranked_rows(session, stmt, matches, limit, after)
            items = [question_public(r) for r in found[:limit]]
            if len(found) <= limit:
                return items, None
            return items, [found[limit - 1].sort_order, found[limit - 1].id]
        title_hit = case(
            (Question.search_vector.op("@@")(tsquery(_title_only(query))), literal(2.0)),
            (Question.search_vector.op("@@")(tsquery(_title_only(query, " | "))), literal(1.0)),
            else_=literal(0.0),
        )
        # rank/(rank+1) (normalization 32) stays below 1, so the title tiers always dominate.
        rank = cast(title_hit, Float(53)) + cast(
            func.ts_rank(Question.search_vector, matches, 32), Float(53)
        )
        stmt = stmt.add_columns(rank.label("rank")).where(Question.search_vector.op("@@")(matches))
        stmt = keyset_page(stmt, rank, Question.id, after, descending=True)
    else:
        stmt = keyset_page(stmt, Question.sort_order, Question.id, after)
    rows = (await session.execute(stmt.limit(limit + 1))).all()
    page = rows[:limit]
    items = [question_public(r) for r in page]
    if len(rows) <= limit:
        return items, None
    last = page[-1]
    if q is not None:
        return items, [last.rank, last.id]
    return items, [last.sort_order, last.id]


async def list_revisions(
    session: AsyncSession, ref: str, *, limit: int, after: list[Any] | None
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """Revisions newest first. The sort key is [question id, number]: a cursor of another
    question's revisions is refused."""
    question = await load(session, ref)
    stmt = select(QuestionRevision).where(QuestionRevision.question_id == question.id)
    if after is not None:
        if len(after) != 2 or after[0] != question.id or not isinstance(after[1], int):
            raise ValidationFailed(
                "The cursor is not valid.", details=field_error("cursor", "not valid")
            )
        stmt = stmt.where(QuestionRevision.number < after[1])
    rows = list(
        (await session.execute(stmt.order_by(QuestionRevision.number.desc()).limit(limit + 1)))
        .scalars()
        .all()
    )
    page = rows[:limit]
    items = [revision_public(r) for r in page]
    if len(rows) <= limit:
        return items, None
    return items, [question.id, page[-1].number]
