"""The API's hot reads of questions (issue 14): the single read and the list without search,
category or worklist filter, each question's JSON text built by PostgreSQL, byte for byte what
``schemas.question_public`` and orjson make of it (issue 40: from the one declared shape,
``schemas.SHAPE``), passed through by the API with no per-field Python
(``tenancy.db.read_records``). Split from ``queries`` (the reads that return rows)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.visibility import Audiences, question_rule_sql
from api.errors import QuestionNotFound, ValidationFailed, field_error
from api.external_ids import external_id_sql
from api.questions import read_drafts
from api.questions.models import Question
from api.questions.schemas import DRAFT, INT, SHAPE, STAMP, question_public
from tenancy.db import read_records
from tenancy.ids import looks_like_id

# ---- the hot reads' JSON, built in SQL (issue 14) -------------------------------------------
# Each question's public shape (``question_public``) as JSON text, byte for byte what orjson
# makes of it: the same keys in the same order, no spaces, strings escaped by ``to_json`` (the
# same escapes as orjson: ``"``, ``\``, control characters; nothing else), timestamps as
# ``tenancy.clock.iso`` writes them (UTC, milliseconds cut, not rounded, and ``Z``). The API
# passes the text through: no per-field Python, no SQLAlchemy statement or result layer.


def _text(expr: str) -> str:
    return f"to_json({expr})::text"


def _stamp(expr: str) -> str:
    return f"""'"' || to_char({expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'"""


def _optional_stamp(expr: str) -> str:
    # asyncpg reads PostgreSQL's infinities as datetime's extremes: iso() writes those.
    return (
        f"CASE WHEN {expr} IS NULL THEN 'null'"
        f""" WHEN {expr} = 'infinity' THEN '"9999-12-31T23:59:59.999Z"'"""
        f""" WHEN {expr} = '-infinity' THEN '"0001-01-01T00:00:00.000Z"'"""
        f" ELSE {_stamp(expr)} END"
    )


_SERVED_SQL = "s.status = 'published'"
# The fields whose SQL is not their column's: served in the read's locale, or a subquery.
_SQL_OF = {
    "locale": _text(f"CASE WHEN {_SERVED_SQL} THEN s.locale ELSE q.locale END"),
    "title": _text(f"CASE WHEN {_SERVED_SQL} THEN s.title ELSE q.title END"),
    "answer": _text(f"CASE WHEN {_SERVED_SQL} THEN s.answer ELSE q.answer END"),
    "externalId": f"COALESCE({_text(external_id_sql('question', 'q.id'))}, 'null')",
}


def _field_sql(name: str, attr: str, kind: str) -> str:
    if name in _SQL_OF:
        return _SQL_OF[name]
    if kind == STAMP:
        return _optional_stamp(f"q.{attr}")
    return f"q.{attr}::text" if kind == INT else _text(f"q.{attr}")


# ``schemas.SHAPE`` in SQL, field by field.
_FIELDS_SQL = tuple((name, _field_sql(name, attr, kind)) for name, attr, kind in SHAPE)


def _json_sql(drafts: bool) -> str:
    """The question's JSON; its ``draft`` from the joined draft (``d``), else null."""
    draft = read_drafts.draft_sql(_stamp, _text) if drafts else "'null'"
    return (
        " || ".join(
            f"""'{"{" if n == 0 else ","}"{name}":' || {expr}"""
            for n, (name, expr) in enumerate((*_FIELDS_SQL, (DRAFT, draft)))
        )
        + " || '}'"
    )


def _from_sql(drafts: bool) -> str:
    """$1: the locale of the read. Tables unqualified: ``read_records`` binds the org's
    schema."""
    return (
        "FROM questions q LEFT JOIN question_translations s"
        f" ON s.question_id = q.id AND s.locale = $1{read_drafts.DRAFT_JOIN_SQL if drafts else ''}"
        " WHERE q.deleted_at IS NULL"
    )


def _readable_sql(audiences: Audiences) -> str:
    """Published questions its readers may read (issue 39), for ``audiences`` other than None;
    nothing for None (who sees everything: any status, the view decides)."""
    rule = question_rule_sql(audiences, "q")
    return "" if rule is None else f" AND q.status = 'published' AND {rule}"


# The single read: by id or by slug ($2); its status and served locale for the view.
@lru_cache(maxsize=256)
def _get_sql(by_id: bool, drafts: bool, audiences: Audiences) -> str:
    return (
        f"SELECT q.status, CASE WHEN {_SERVED_SQL} THEN s.locale ELSE q.locale END,"
        f" q.id, {_json_sql(drafts)} {_from_sql(drafts)} AND q.{'id' if by_id else 'slug'} = $2"
        f"{_readable_sql(audiences)}"
    )


@lru_cache(maxsize=512)
def _page_sql(status: bool, after: bool, drafts: bool, audiences: Audiences = None) -> str:
    """The plain list in its order (``keyset_page``'s conditions): ``$2`` the limit, then the
    status when filtered, then the cursor's order and id when after one; ``audiences``: only
    published questions its readers may read (issue 39; None: no rule)."""
    where = _readable_sql(audiences)
    n = 3
    if status:
        where += f" AND q.status = ${n}"
        n += 1
    if after:
        where += f" AND (q.sort_order > ${n} OR (q.sort_order = ${n} AND q.id > ${n + 1}))"
    return (
        f"SELECT q.sort_order, q.id, {_json_sql(drafts)} {_from_sql(drafts)}{where}"
        " ORDER BY q.sort_order, q.id LIMIT $2"
    )


async def get_question_json(
    session: AsyncSession, ref: str, locale: str, *, drafts: bool, audiences: Audiences = None
) -> tuple[str, str, str, bytes]:
    """``get_question`` as the single read's response body, ``{"data": ...}``: (the
    question's status, its served locale, its id, the body). ``drafts``: whether it shows its
    draft (never to a publishable key); ``audiences`` (``api.audiences.visibility``): a
    question its readers may not read, or not published, is not found (None: any)."""
    sql = _get_sql(looks_like_id(ref, "q"), drafts, audiences)
    rows = await read_records(session, sql, locale, ref)
    if not rows:
        raise QuestionNotFound()
    row = rows[0]
    return row[0], row[1], row[2], b'{"data":' + row[3].encode() + b"}"


async def plain_page_json(
    session: AsyncSession,
    *,
    limit: int,
    after: list[Any] | None,
    status: str | None,
    locale: str,
    drafts: bool,
    audiences: Audiences = None,
) -> tuple[list[str], list[Any] | None]:
    """``list_questions`` with no search, category or worklist filter (``status`` may be
    given) as each item's JSON text, and the sort key of the last item when more follow;
    ``audiences``: only published questions its readers may read (None: no rule)."""
    args: list[Any] = [locale, limit + 1]
    if status is not None:
        args.append(status)
    if after is not None:
        # Signed by us, so always [order, id]; anything else is refused, not sent on.
        if len(after) != 2 or type(after[0]) is not int or type(after[1]) is not str:
            raise ValidationFailed(
                "The cursor is not valid.", details=field_error("cursor", "not valid")
            )
        args += after
    sql = _page_sql(status is not None, after is not None, drafts, audiences)
    rows = await read_records(session, sql, *args)
    page = rows[:limit]
    items = [row[2] for row in page]
    if len(rows) <= limit:
        return items, None
    return items, [page[-1][0], page[-1][1]]


def question_body(question: Question, draft: dict[str, Any] | None) -> bytes:
    """The body ``get_question_json`` answers for a question served in its own locale to a
    secret key, from the loaded row and its draft's summary: the same bytes (the SQL above
    builds what orjson makes of ``question_public``), so a conditional write compares its
    ``If-Match`` without a second read (``api.http.conditional_locks``)."""
    return orjson.dumps({"data": question_public(question, draft)})
