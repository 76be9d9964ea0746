"""What the help center's pages show, read with the API's own queries (``api.questions.
queries``, ``api.categories.queries``): only published questions, served in the page's locale
(the published translation, else the question's own text). No Quart here.

Issue 39: only what the page's reader may read (``api.audiences.visibility``): each read takes
the reader's ``audiences``, the anonymous visitor's (``ANONYMOUS``, ``()``: content with no
audience on the question or any category above it) unless told otherwise. A restricted
question answers exactly like one that does not exist."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, column, func, literal, select, table
from sqlalchemy.ext.asyncio import AsyncSession

from api.answers.service import answers_for
from api.audiences.visibility import Audiences, question_visible
from api.categories import queries as categories
from api.errors import CategoryNotFound, QuestionNotFound, ValidationFailed
from api.questions import queries as questions
from api.questions.models import Question
from api.questions.rules import LIVE
from tenancy.clock import utcnow
from tenancy.errors import ServiceError
from tenancy.principal import Principal

PUBLISHED = "published"
MAX_CATEGORIES = 500
MAX_LISTED = 200  # questions listed on a category page
SEARCH_RESULTS = 20
MAX_QUERY = 200  # the API's limit on q
POPULAR = 10
POPULAR_DAYS = 30
SECTION_PREVIEW = 3  # a section's first questions shown on its parent's page
SITEMAP_BATCH = 500  # questions read per query of a sitemap page (keyset, by id)

ANONYMOUS: Audiences = ()  # the help center's reader until readers sign in to it
VIEWS = table("question_views_daily", column("question_id"), column("day"), column("views"))


@dataclass
class Node:
    category: dict[str, Any]
    children: list[Node] = field(default_factory=list)


async def all_categories(
    session: AsyncSession, locale: str, audiences: Audiences = ANONYMOUS
) -> list[dict[str, Any]]:
    """The categories readers of ``audiences`` may read (a question page's crumbs)."""
    items, _ = await categories.list_categories(
        session, limit=MAX_CATEGORIES, after=None, q=None, locale=locale, audiences=audiences
    )
    return items


def visible_counts(items: list[dict[str, Any]]) -> dict[str, int]:
    """Per category, the published questions in it and its sub-categories at any depth
    (``items``: ``api.categories.visibility.visible_categories``): a category card's number."""
    by_id = {c["id"]: c for c in items}
    counts = dict.fromkeys(by_id, 0)
    for item in items:
        category_id: str | None = item["id"]
        seen: set[str] = set()
        while category_id is not None and category_id in by_id and category_id not in seen:
            seen.add(category_id)
            counts[category_id] += int(item["questionCount"])
            category_id = by_id[category_id]["parentId"]
    return counts


def tree(items: list[dict[str, Any]]) -> list[Node]:
    """The categories as a tree (their order kept); one whose parent is gone is a root."""
    nodes = {c["id"]: Node(c) for c in items}
    roots: list[Node] = []
    for item in items:
        parent = nodes.get(item["parentId"] or "")
        (parent.children if parent is not None else roots).append(nodes[item["id"]])
    return roots


def ancestors(items: list[dict[str, Any]], category_id: str | None) -> list[dict[str, Any]]:
    """The category and its ancestors, root first."""
    by_id = {c["id"]: c for c in items}
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while category_id and category_id in by_id and category_id not in seen:
        seen.add(category_id)
        chain.append(by_id[category_id])
        category_id = by_id[category_id]["parentId"]
    return chain[::-1]


SERVED_TITLE = next(c for c in questions.SERVED_COLUMNS if c.key == "title")


def readable(audiences: Audiences = ANONYMOUS) -> tuple[Any, ...]:
    """The conditions of a question its readers may read here: live, published, and
    ``audiences`` allows it."""
    return (LIVE, Question.status == PUBLISHED, question_visible(audiences))


def _served(locale: str, audiences: Audiences = ANONYMOUS) -> Any:
    on = and_(
        questions.SERVED.question_id == Question.id, questions.SERVED.locale == literal(locale)
    )
    return (
        select(Question.id, Question.slug, SERVED_TITLE)
        .select_from(Question)
        .outerjoin(questions.SERVED, on)
        .where(*readable(audiences))
    )


async def popular(
    session: AsyncSession, locale: str, audiences: Audiences = ANONYMOUS
) -> list[dict[str, Any]]:
    """The most viewed published questions of the last 30 days (views summed per question):
    ``[{"id", "slug", "title"}]``; none viewed, none (issue 41: never the newest rows in
    their place)."""
    since = utcnow().date() - timedelta(days=POPULAR_DAYS - 1)
    views = (
        select(VIEWS.c.question_id, func.sum(VIEWS.c.views).label("views"))
        .where(VIEWS.c.day >= since)
        .group_by(VIEWS.c.question_id)
        .subquery()
    )
    stmt = (
        _served(locale, audiences)
        .join(views, views.c.question_id == Question.id)
        .order_by(views.c.views.desc(), Question.id)
        .limit(POPULAR)
    )
    rows = (await session.execute(stmt)).all()
    return [{"id": r.id, "slug": r.slug, "title": r.title} for r in rows]


async def published_question(
    session: AsyncSession, slug: str, locale: str, audiences: Audiences = ANONYMOUS
) -> dict[str, Any]:
    """The published question with this slug as served in ``locale``, one readers of
    ``audiences`` may read (None: any published one); else 404."""
    question = await questions.get_question(
        session, slug, locale, drafts=False, audiences=audiences
    )
    if question["status"] != PUBLISHED or question["slug"] != slug:
        raise QuestionNotFound()
    return question


class QuestionGone(ServiceError):
    """A question that was published and is now deleted: its page is a 410 (issue 32)."""

    status = 410
    code = "question_gone"
    message = "This question was deleted."


async def published_or_gone(
    session: AsyncSession, slug: str, locale: str, audiences: Audiences = ANONYMOUS
) -> dict[str, Any]:
    """``published_question``; when no live question has the slug but a deleted one that
    was published does, ``QuestionGone`` (a draft deleted stays a 404: it never was public;
    so does one its readers could not read: a 410 would say it existed)."""
    try:
        return await published_question(session, slug, locale, audiences)
    except QuestionNotFound:
        gone = select(Question.id).where(
            Question.slug == slug,
            Question.deleted_at.is_not(None),
            Question.status == PUBLISHED,
            question_visible(audiences),
        )
        if (await session.execute(gone.limit(1))).first() is not None:
            raise QuestionGone() from None
        raise


async def category_questions(
    session: AsyncSession, slug: str, locale: str, audiences: Audiences = ANONYMOUS
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The category (404 when unknown or not for readers of ``audiences``) and its published
    questions they may read, in the list's order."""
    category = await categories.get_category(session, slug, locale, audiences=audiences)
    if category["slug"] != slug:  # pages are addressed by slug only (one URL per page)
        raise CategoryNotFound()
    items, _ = await questions.list_questions(
        session,
        limit=MAX_LISTED,
        after=None,
        q=None,
        category=category["id"],
        status=PUBLISHED,
        locale=locale,
        drafts=False,
        audiences=audiences,
    )
    return category, items


async def first_questions(
    session: AsyncSession,
    category_ids: list[str],
    locale: str,
    per_category: int,
    audiences: Audiences = ANONYMOUS,
) -> dict[str, list[dict[str, Any]]]:
    """The first ``per_category`` published questions of each category (the list's order:
    ``order``, then id), served in ``locale``: ``{category_id: [{"slug", "title"}]}``."""
    if not category_ids:
        return {}
    rank = (
        func.row_number()
        .over(partition_by=Question.category_id, order_by=(Question.sort_order, Question.id))
        .label("rank")
    )
    ranked = (
        _served(locale, audiences)
        .add_columns(Question.category_id, rank)
        .where(Question.category_id.in_(category_ids))
        .subquery()
    )
    stmt = (
        select(ranked.c.category_id, ranked.c.slug, ranked.c.title)
        .where(ranked.c.rank <= per_category)
        .order_by(ranked.c.category_id, ranked.c.rank)
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for row in (await session.execute(stmt)).all():
        out.setdefault(row.category_id, []).append({"slug": row.slug, "title": row.title})
    return out


async def search(
    session: AsyncSession, reader: Principal, q: str, locale: str
) -> list[dict[str, Any]]:
    """The published questions that best answer ``q`` in ``locale`` (``/answers``' ranking:
    by meaning, typos forgiven, the org's synonyms), each with its answer's ``snippet``;
    only what ``reader`` may read (``answers_for``)."""
    if not q.strip():
        return []
    try:
        found = await answers_for(
            session, reader, q=q, locale=locale, limit=SEARCH_RESULTS, category=None
        )
    except ValidationFailed:  # no word to search ("?!")
        return []
    return [{**answer.question, "snippet": answer.snippet["answer"]} for answer in found]


def _published_ids(audiences: Audiences = ANONYMOUS) -> Any:
    return select(Question.id).where(*readable(audiences))


async def published_count(session: AsyncSession, audiences: Audiences = ANONYMOUS) -> int:
    """How many questions are published for readers of ``audiences`` (the sitemap index's
    pages)."""
    stmt = select(func.count()).select_from(_published_ids(audiences).subquery())
    return int((await session.execute(stmt)).scalar_one())


async def published_slugs(
    session: AsyncSession,
    *,
    skip: int,
    limit: int,
    batch: int = SITEMAP_BATCH,
    audiences: Audiences = ANONYMOUS,
) -> AsyncIterator[list[tuple[str, datetime]]]:
    """The slug and last change of the published questions in id order, ``limit`` of them
    after the first ``skip``, in batches of at most ``batch`` read by keyset (one page of the
    sitemap: never more than a batch in memory here)."""
    start = (
        await session.execute(_published_ids(audiences).order_by(Question.id).offset(skip).limit(1))
    ).scalar_one_or_none()
    if start is None:
        return
    after: str | None = None
    while limit > 0:
        stmt = (
            select(Question.id, Question.slug, Question.updated_at)
            .where(*readable(audiences))
            .where(Question.id > after if after is not None else Question.id >= start)
            .order_by(Question.id)
            .limit(min(batch, limit))
        )
        rows = (await session.execute(stmt)).all()
        if not rows:
            return
        limit -= len(rows)
        after = rows[-1].id
        yield [(r.slug, r.updated_at) for r in rows]
