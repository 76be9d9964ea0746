"""Reads of categories as served in a locale (``get_category``, ``list_categories``): each
category's translation in that locale, else its own name and description, with its live
question count (of published questions only for readers who see nothing else). One statement
per read: the translation is a LEFT JOIN on its primary key
(category id, locale)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, literal, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from api.audiences.visibility import Audiences, category_visible, question_visible
from api.categories.models import Category
from api.categories.schemas import category_public
from api.errors import CategoryNotFound
from api.external_ids import external_id_column, imported_as
from api.http.pagination import keyset_page
from api.questions.models import Question
from api.search import prefix_query, tsquery
from api.translations.models import CategoryTranslation
from tenancy.audit import latest_entries
from tenancy.clock import iso
from tenancy.ids import looks_like_id

LIVE = Category.deleted_at.is_(None)
SERVED = aliased(CategoryTranslation, name="served")
TRANSLATED = SERVED.category_id.is_not(None)
SERVED_VECTOR = case((TRANSLATED, SERVED.search_vector), else_=Category.search_vector)


def _served(column: Any, translated: Any) -> ColumnElement[Any]:
    return case((TRANSLATED, translated), else_=column).label(column.key)


def _question_count(published_only: bool, audiences: Audiences = None) -> ColumnElement[int]:
    counted = [Question.category_id == Category.id, Question.deleted_at.is_(None)]
    if published_only:
        counted.append(Question.status == "published")
    if audiences is not None:  # only the questions its readers may read (issue 39)
        counted.append(question_visible(audiences))
    return select(func.count()).where(*counted).correlate(Category).scalar_subquery()


@lru_cache(maxsize=256)
def _columns(published_only: bool, audiences: Audiences = None) -> tuple[Any, ...]:
    return (
        Category.id,
        Category.slug,
        _served(Category.locale, SERVED.locale),
        _served(Category.name, SERVED.name),
        _served(Category.description, SERVED.description),
        Category.sort_order,
        Category.parent_id,
        Category.is_default,
        Category.audiences,
        Category.created_at,
        Category.updated_at,
        _question_count(published_only, audiences).label("question_count"),
        external_id_column("category", Category.id),
    )


# Secret readers count every live question; publishable keys (and the help center) only the
# published ones their reader may read, the only ones they can read.
COLUMNS = {False: _columns(False), True: _columns(True)}


def _in_locale(
    locale: str, published_only: bool = False, audiences: Audiences = None
) -> Select[Any]:
    """The live categories served in ``locale``; ``audiences`` (issue 39,
    ``api.audiences.visibility``): only those its readers may read, counting only their
    questions (None: every category)."""
    on = and_(SERVED.category_id == Category.id, SERVED.locale == literal(locale))
    stmt = select(*_columns(published_only, audiences)).select_from(Category).outerjoin(SERVED, on)
    stmt = stmt.where(LIVE)
    return stmt if audiences is None else stmt.where(category_visible(audiences))


def _by_ref(ref: str) -> ColumnElement[bool]:
    return Category.id == ref if looks_like_id(ref, "cat") else Category.slug == ref


async def get_category(
    session: AsyncSession,
    ref: str,
    locale: str,
    *,
    published_only: bool = False,
    audiences: Audiences = None,
) -> dict[str, Any]:
    """One category (404 when unknown, or not for readers of ``audiences``)."""
    statement = _in_locale(locale, published_only, audiences).where(_by_ref(ref))
    row = (await session.execute(statement)).first()
    if row is None:
        raise CategoryNotFound()
    return category_public(row, row.question_count, row.external_id)


def _served_match(locale: str, matches: ColumnElement[str]) -> ColumnElement[bool]:
    """Categories whose served text matches, found through the search vectors of both."""
    hits = union_all(
        select(Category.id).where(Category.search_vector.op("@@")(matches)),
        select(CategoryTranslation.category_id).where(
            CategoryTranslation.locale == literal(locale),
            CategoryTranslation.search_vector.op("@@")(matches),
        ),
    )
    return and_(Category.id.in_(hits), SERVED_VECTOR.op("@@")(matches))


async def list_categories(
    session: AsyncSession,
    *,
    limit: int,
    after: list[Any] | None,
    q: str | None,
    locale: str,
    published_only: bool = False,
    external_id: str | None = None,
    audiences: Audiences = None,
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """A page served in ``locale`` and the sort key of its last item when more follow (keyset
    pagination); with ``q``, the best matches of the served text first (stemmed in the
    locale's language). ``published_only``: question counts of published questions only;
    ``audiences``: only the categories (and counted questions) its readers may read."""
    stmt = _in_locale(locale, published_only, audiences)
    if external_id is not None:  # the category an import made of that source item
        stmt = stmt.where(Category.id.in_(imported_as("category", external_id)))
    if q is not None:
        query = prefix_query(q)
        if query is None:
            return [], None
        matches = tsquery(query, locale)
        rank = func.ts_rank(SERVED_VECTOR, matches)
        stmt = stmt.add_columns(rank.label("rank")).where(_served_match(locale, matches))
        stmt = keyset_page(stmt, rank, Category.id, after, descending=True)
    else:
        stmt = keyset_page(stmt, Category.sort_order, Category.id, after)
    rows = (await session.execute(stmt.limit(limit + 1))).all()
    page = rows[:limit]
    items = [category_public(r, r.question_count, r.external_id) for r in page]
    if len(rows) <= limit:
        return items, None
    last = page[-1]
    return items, [last.rank, last.id] if q is not None else [last.sort_order, last.id]


AUDIT_LIMIT = 100


async def audit_log(session: AsyncSession) -> list[dict[str, Any]]:
    return [
        {
            "id": e.id,
            "action": e.action,
            "categoryId": e.resource_id,
            "actor": e.actor,
            "before": e.before,
            "after": e.after,
            "createdAt": iso(e.created_at),
        }
        for e in await latest_entries(session, "category", AUDIT_LIMIT)
    ]
