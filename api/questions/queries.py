"""Reads of questions: one question (``get_question``), a page of questions (``list_questions``:
keyset pagination, ranked search with ``q``), a page of a question's revisions
(``list_revisions``), the live count (``count_live``) and loading a question by id or slug
(``load``, for the writes: it returns the ORM object). The question reads select the public
columns (``PUBLIC_COLUMNS``), not ORM objects, as Core statements (``tenancy.db.read_rows``):
in a request that has not written, one round trip on a connection already bound to the org.
The API's hot reads, JSON built by PostgreSQL, are ``read_json``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Select,
    and_,
    bindparam,
    case,
    cast,
    func,
    inspect,
    literal,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from api.audiences.visibility import Audiences, category_visible, question_visible
from api.categories.models import Category
from api.errors import QuestionNotFound, ValidationFailed, field_error
from api.external_ids import external_id_column, imported_as
from api.http.pagination import keyset_page
from api.questions import read_drafts
from api.questions.models import Question, QuestionRevision
from api.questions.rules import LIVE
from api.questions.schemas import SHAPE, revision_public
from api.search import prefix_query, tsquery, unranked
from api.translations.models import QuestionTranslation, source_digest_sql
from tenancy.db import read_rows
from tenancy.ids import looks_like_id
from tenancy.transactions import per_transaction

# The columns of the public shape (``schemas.SHAPE``; ``external_id`` is selected beside them,
# ``EXTERNAL_ID``): reads select these rows, not ORM objects (no identity map, no search vector
# on the wire).
PUBLIC_COLUMNS: tuple[Any, ...] = tuple(
    getattr(Question, attr) for _, attr, _ in SHAPE if attr != "external_id"
)


# The question's translation in the locale of the read (any status: the worklist filters on
# it); only a published one is served.
SERVED = aliased(QuestionTranslation, name="served")
PUBLISHED = SERVED.status == literal("published")


def _served(column: Any, translated: Any, name: str) -> ColumnElement[Any]:
    return case((PUBLISHED, translated), else_=column).label(name)


# PUBLIC_COLUMNS as served in a locale: the published translation's title and answer (and its
# locale), else the question's own.
SERVED_COLUMNS: tuple[Any, ...] = tuple(
    _served(column, getattr(SERVED, column.key), column.key)
    if column.key in ("locale", "title", "answer")
    else column
    for column in PUBLIC_COLUMNS
)
SERVED_VECTOR = case((PUBLISHED, SERVED.search_vector), else_=Question.search_vector)
EXTERNAL_ID = external_id_column("question", Question.id)  # its import's source (issue 29)


def in_locale(locale: str) -> Select[Any]:
    """The live questions as served in ``locale``: one LEFT JOIN on the translations' primary
    key (question id, locale)."""
    on = and_(SERVED.question_id == Question.id, SERVED.locale == literal(locale))
    stmt = (
        select(*SERVED_COLUMNS, EXTERNAL_ID, *read_drafts.DRAFT_COLUMNS)
        .select_from(Question)
        .outerjoin(SERVED, on)
    )
    # The draft beside it (issue 30): its primary key, one row at most.
    return stmt.outerjoin(read_drafts.QuestionDraft, read_drafts.DRAFT_ON).where(LIVE)


def _served_match(locale: str, matches: ColumnElement[str]) -> ColumnElement[bool]:
    """The questions whose served text matches, found through the search indexes: the ids
    matched by the questions' own vectors or by published translations in ``locale``, then
    each checked against the text it is served in."""
    hits = union_all(
        select(Question.id).where(Question.search_vector.op("@@")(matches)),
        select(QuestionTranslation.question_id).where(
            QuestionTranslation.locale == literal(locale),
            QuestionTranslation.status == literal("published"),
            QuestionTranslation.search_vector.op("@@")(matches),
        ),
    )
    return and_(Question.id.in_(hits), SERVED_VECTOR.op("@@")(matches))


def _by_ref(ref: str) -> ColumnElement[bool]:
    return Question.id == ref if looks_like_id(ref, "q") else Question.slug == ref


# The hot reads, built once per locale with their values as parameters: building a select and
# its cache key costs more Python than running it (issue 14). Bounded: locales are few.
_PREBUILT_MAX = 256
_prebuilt: dict[tuple[str, str, bool], Select[Any]] = {}


def _prebuilt_statement(kind: str, locale: str, flag: bool) -> Select[Any]:
    """``get`` (flag: by id, else by slug; parameter ``ref``) or ``page`` (the plain list in
    its order; flag: after a cursor, parameters ``after_order`` and ``after_id``; ``limit``)."""
    key = (kind, locale, flag)
    stmt = _prebuilt.get(key)
    if stmt is not None:
        return stmt
    if kind == "get":
        column = Question.id if flag else Question.slug
        stmt = in_locale(locale).where(column == bindparam("ref"))
    else:
        after: list[Any] | None = (
            [bindparam("after_order"), bindparam("after_id")] if flag else None
        )
        stmt = keyset_page(in_locale(locale), Question.sort_order, Question.id, after)
        stmt = stmt.limit(bindparam("limit"))
    if len(_prebuilt) < _PREBUILT_MAX:
        _prebuilt[key] = stmt
    return stmt


Locked = tuple[Question, dict[str, Any] | None]
# The draft's columns beside a locked question (built once: the lock is on every write's path).
_LOCK_DRAFT = read_drafts.draft_returning()


def _locked(session: AsyncSession) -> dict[str, Locked]:
    """The questions this transaction has locked and loaded, by id and by slug, each with
    its draft's summary as it was when locked."""
    return per_transaction(session, "questions.locked", dict[str, Locked])


async def load(session: AsyncSession, ref: str, *, lock: bool = False) -> Question:
    """The live question with this id or slug (row-locked with ``lock``), else 404. A
    question locked once in a transaction is not locked again (issue 40: a conditional
    PATCH's lock, the review rules and the write share one ``SELECT … FOR UPDATE``)."""
    if lock:
        return (await load_locked(session, ref))[0]
    question = (await session.execute(select(Question).where(LIVE, _by_ref(ref)))).scalar()
    if question is None:
        raise QuestionNotFound()
    return question


async def load_locked(session: AsyncSession, ref: str) -> Locked:
    """``load(lock=True)`` and the question's ``draft`` as a secret key's GET shows it, from
    the same statement (the draft's columns are subqueries on its primary key; only the
    question's row is locked): what a conditional write compares without reading the
    question again (``api.http.conditional_locks``)."""
    held = _locked(session).get(ref)
    if held is not None and not inspect(held[0]).expired_attributes:
        return held
    stmt = select(Question, *_LOCK_DRAFT).where(LIVE, _by_ref(ref)).with_for_update(of=Question)
    row = (await session.execute(stmt)).first()
    if row is None:
        raise QuestionNotFound()
    question = row[0]
    entry = (question, read_drafts.draft_summary(row, True))
    locked = _locked(session)
    locked[question.id] = locked[question.slug] = entry
    return entry


def changed(session: AsyncSession, question: Question) -> None:
    """``question``'s row was written: the next ``load`` reads it again (still locked)."""
    locked = _locked(session)
    locked.pop(question.id, None)
    locked.pop(question.slug, None)


async def count_live(session: AsyncSession) -> int:
    return (await session.execute(select(func.count()).where(LIVE))).scalar_one()


async def get_question(
    session: AsyncSession, ref: str, locale: str, *, drafts: bool, audiences: Audiences = None
) -> dict[str, Any]:
    """The question as served in ``locale`` (its published translation, else its own), with
    its draft when ``drafts``; ``audiences`` (issue 39, ``api.audiences.visibility``): a
    question its readers may not read, or not published, is not found (None: any)."""
    stmt = _prebuilt_statement("get", locale, looks_like_id(ref, "q"))
    if audiences is not None:
        stmt = stmt.where(Question.status == "published", question_visible(audiences))
    row = (await read_rows(session, stmt, {"ref": ref})).first()
    if row is None:
        raise QuestionNotFound()
    return read_drafts.question_read(row, drafts)


def _category_filter(ref: str, audiences: Audiences) -> ColumnElement[bool]:
    by_ref = Category.id == ref if looks_like_id(ref, "cat") else Category.slug == ref
    return Question.category_id.in_(
        select(Category.id).where(
            Category.deleted_at.is_(None), by_ref, category_visible(audiences)
        )
    )


def _title_only(query: str, joiner: str = " & ") -> str:
    """The same prefix query restricted to the title's lexemes (weight A): every word
    (``" & "``) or any word (``" | "``)."""
    return joiner.join(f"{term}A" for term in query.split(" & "))


# A one-letter search looks for its page among this many questions of the list first.
UNRANKED_WINDOW = 2_000


async def _unranked_rows(
    session: AsyncSession,
    stmt: Any,
    matches: ColumnElement[str],
    hit: ColumnElement[bool],
    limit: int,
    after: Any,
) -> list[Any]:
    """Up to ``limit + 1`` matches in the list's order, with bounded work either way: first
    among the next ``UNRANKED_WINDOW`` questions of the list (a dense match set fills the page
    there: an index walk of at most that many rows, each row checked against the text it is
    served in, ``SERVED_VECTOR``); when they hold too few matches, the rest come from the
    search indexes (``hit``: then the match set is small: at most about
    ``limit / UNRANKED_WINDOW`` of the org), sorted. PostgreSQL over-estimates one-letter
    prefixes, so it would otherwise walk the whole list when a letter matches next to nothing.
    """
    key = tuple_(Question.sort_order, Question.id)
    listed = keyset_page(stmt, Question.sort_order, Question.id, after)
    bound = (
        await read_rows(
            session,
            listed.with_only_columns(Question.sort_order, Question.id)
            .offset(UNRANKED_WINDOW - 1)
            .limit(1),
        )
    ).first()
    # The served vector, not the bare column: the list index walks the window and checks each
    # row (PostgreSQL would otherwise build the search index's bitmap of every match first).
    near = listed.where(SERVED_VECTOR.op("@@")(matches))
    if bound is not None:
        near = near.where(key <= tuple_(literal(bound.sort_order), literal(bound.id)))
    rows = list((await read_rows(session, near.limit(limit + 1))).all())
    if bound is None or len(rows) > limit:
        return rows
    beyond = stmt.where(hit, key > tuple_(literal(bound.sort_order), literal(bound.id)))
    # ``sort_order + 0``: not the list index's order, so the search index finds the few rows.
    beyond = beyond.order_by(Question.sort_order + 0, Question.id).limit(limit + 1 - len(rows))
    return rows + list((await read_rows(session, beyond)).all())


def _translation_filter(state: str, locale: str) -> ColumnElement[bool]:
    """The translators' worklist: the state of each question's translation in the locale of
    the read (``missing`` leaves out questions written in that locale)."""
    if state == "missing":
        return and_(SERVED.question_id.is_(None), Question.locale != literal(locale))
    if state == "outdated":
        source: list[ColumnElement[str | None]] = [Question.title, Question.answer]  # type: ignore[list-item]
        current = source_digest_sql(*source)
        return and_(SERVED.question_id.is_not(None), SERVED.source_digest != current)
    return SERVED.status == literal(state)


async def list_questions(
    session: AsyncSession,
    *,
    limit: int,
    after: list[Any] | None,
    q: str | None,
    category: str | None,
    status: str | None,
    locale: str,
    translation: str | None = None,
    external_id: str | None = None,
    drafts: bool,
    audiences: Audiences = None,
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """A page, served in ``locale``, and the sort key of its last item when more follow
    (keyset pagination).

    With ``q``: every word must prefix-match the text served in ``locale`` (stemmed in that
    language, ``api/search.py``); a question whose title holds every word ranks above one
    whose title holds some of them, which ranks above one that matches only through its
    answer; then ``ts_rank`` decides, then the id. A query of one-letter words only (``q=h``)
    matches nearly every question of a large org: its matches are not ranked but listed in
    the list's order, so PostgreSQL stops at the page's end (``unranked``). ``translation``
    (missing, outdated, draft, published) keeps the questions whose translation in ``locale``
    is in that state. ``external_id``: the question an import made of that source item.
    ``drafts``: whether the items show their drafts (never to a publishable key).
    ``audiences`` (issue 39, ``api.audiences.visibility``): only questions its readers may
    read (None: no audience rule).
    """
    show = drafts
    filters = (category, status, translation, q, external_id, audiences)
    if filters == (None, None, None, None, None, None):
        return await _plain_page(session, limit, after, locale, show)
    stmt = in_locale(locale)
    if audiences is not None:
        stmt = stmt.where(question_visible(audiences))
    if external_id is not None:
        stmt = stmt.where(Question.id.in_(imported_as("question", external_id)))
    if category is not None:
        stmt = stmt.where(_category_filter(category, audiences))
    if status is not None:
        stmt = stmt.where(Question.status == status)
    if translation is not None:
        stmt = stmt.where(_translation_filter(translation, locale))
    if q is not None:
        query = prefix_query(q)
        if query is None:
            return [], None
        matches = tsquery(query, locale)
        if unranked(q):
            hit = _served_match(locale, matches)
            found = await _unranked_rows(session, stmt, matches, hit, limit, after)
            items = [read_drafts.question_read(r, show) for r in found[:limit]]
            if len(found) <= limit:
                return items, None
            return items, [found[limit - 1].sort_order, found[limit - 1].id]
        title_hit = case(
            (SERVED_VECTOR.op("@@")(tsquery(_title_only(query), locale)), literal(2.0)),
            (SERVED_VECTOR.op("@@")(tsquery(_title_only(query, " | "), locale)), literal(1.0)),
            else_=literal(0.0),
        )
        # rank/(rank+1) (normalization 32) stays below 1, so the title tiers always dominate.
        rank = cast(title_hit, Float(53)) + cast(
            func.ts_rank(SERVED_VECTOR, matches, 32), Float(53)
        )
        stmt = stmt.add_columns(rank.label("rank")).where(_served_match(locale, matches))
        stmt = keyset_page(stmt, rank, Question.id, after, descending=True)
    else:
        stmt = keyset_page(stmt, Question.sort_order, Question.id, after)
    rows = (await read_rows(session, stmt.limit(limit + 1))).all()
    page = rows[:limit]
    items = [read_drafts.question_read(r, show) for r in page]
    if len(rows) <= limit:
        return items, None
    last = page[-1]
    if q is not None:
        return items, [last.rank, last.id]
    return items, [last.sort_order, last.id]


async def _plain_page(
    session: AsyncSession, limit: int, after: list[Any] | None, locale: str, show: bool
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """``list_questions`` without filters nor search: the prebuilt statement."""
    params: dict[str, Any] = {"limit": limit + 1}
    if after is not None:
        params.update(after_order=after[0], after_id=after[1])
    stmt = _prebuilt_statement("page", locale, after is not None)
    rows = (await read_rows(session, stmt, params)).all()
    page = rows[:limit]
    items = [read_drafts.question_read(r, show) for r in page]
    if len(rows) <= limit:
        return items, None
    return items, [page[-1].sort_order, page[-1].id]


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
