"""Reads of content analytics (no Quart): searches, questions and one question's days, from
the daily aggregates only (``search_daily``, ``question_views_daily``,
``question_feedback_daily``: what the actors have counted so far).

A window is ``since`` to ``until``, both included, in UTC days: by default the 30 days ending
today; ``until`` never after today, ``since`` at most ``MAX_DAYS_BACK`` days before today.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from api.analytics import by_audience
from api.errors import ValidationFailed, field_error
from api.questions.queries import load

DEFAULT_DAYS = 30
DAY = timedelta(days=1)
MAX_DAYS_BACK = 400
MAX_REASONS = 20  # per question, as the aggregation keeps per day
SORTS = {"views": "views", "helpful": "helpful", "unhelpful": "unhelpful"}


@dataclass(frozen=True)
class Window:
    since: date
    until: date

    def params(self) -> dict[str, Any]:
        return {"since": self.since, "until": self.until}

    def bounds(self) -> dict[str, datetime]:
        """The window as times: from ``since``'s start to the end of ``until`` (UTC)."""
        start = datetime.combine(self.since, time.min, UTC)
        return {"start": start, "end": datetime.combine(self.until, time.min, UTC) + DAY}

    def both(self) -> dict[str, Any]:
        """The window as days and as times."""
        return {**self.params(), **self.bounds()}

    def days(self) -> list[date]:
        return [self.since + timedelta(days=n) for n in range((self.until - self.since).days + 1)]


def window(since: date | None, until: date | None, today: date) -> Window:
    """The asked window, or 400 ``validation_failed`` naming the field at fault."""
    oldest = today - timedelta(days=MAX_DAYS_BACK)
    if until is not None and until > today:
        raise ValidationFailed(details=field_error("until", "must not be after today (UTC)"))
    end = until or today
    if since is None:
        since = max(end - timedelta(days=DEFAULT_DAYS - 1), oldest)
    if since < oldest:
        raise ValidationFailed(
            details=field_error("since", f"must be at most {MAX_DAYS_BACK} days before today")
        )
    if since > end:
        raise ValidationFailed(details=field_error("since", "must not be after until"))
    return Window(since, end)


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


_TOP_QUERIES = """
    SELECT query, sum(searches)::int AS searches, sum(clicks)::int AS clicks
    FROM search_daily WHERE day BETWEEN :since AND :until {locale}
    GROUP BY query ORDER BY searches DESC, query LIMIT :limit
"""
_NO_RESULTS = """
    SELECT query, sum(no_results)::int AS searches
    FROM search_daily WHERE day BETWEEN :since AND :until AND no_results > 0 {locale}
    GROUP BY query ORDER BY searches DESC, query LIMIT :limit
"""

# The same from the raw searches of one source (``search_events``, by its ``at`` index).
_TOP_QUERIES_OF_SOURCE = """
    SELECT query, count(*)::int AS searches, count(clicked_question_id)::int AS clicks
    FROM search_events WHERE at >= :start AND at < :end AND source = :source {locale}
    GROUP BY query ORDER BY searches DESC, query LIMIT :limit
"""
_NO_RESULTS_OF_SOURCE = """
    SELECT query, count(*)::int AS searches
    FROM search_events
    WHERE at >= :start AND at < :end AND source = :source AND results = 0 {locale}
    GROUP BY query ORDER BY searches DESC, query LIMIT :limit
"""


async def search_analytics(
    session: AsyncSession,
    span: Window,
    *,
    locale: str | None,
    limit: int,
    source: str | None = None,
) -> dict[str, Any]:
    """The most frequent queries with their click-through, and the queries that found
    nothing, each by count (then query), at most ``limit`` of each. With ``source``, from the
    raw searches (the daily aggregates do not keep it; raw rows are kept 90 days)."""
    params = {**span.params(), "limit": limit, "locale": locale, "source": source}
    where = "AND locale = :locale" if locale is not None else ""
    if source is not None:
        params.update(span.bounds())
        top_sql, none_sql = _TOP_QUERIES_OF_SOURCE, _NO_RESULTS_OF_SOURCE
    else:
        top_sql, none_sql = _TOP_QUERIES, _NO_RESULTS
    top = await session.execute(text(top_sql.format(locale=where)), params)
    none = await session.execute(text(none_sql.format(locale=where)), params)
    audiences = await by_audience.searches(session, span.both(), locale=locale, source=source)
    return {
        "since": span.since.isoformat(),
        "until": span.until.isoformat(),
        "topQueries": [
            {
                "query": r.query,
                "searches": r.searches,
                "clicks": r.clicks,
                "clickThroughRate": _rate(r.clicks, r.searches) or 0.0,
            }
            for r in top
        ],
        "noResults": [{"query": r.query, "searches": r.searches} for r in none],
        "byAudience": audiences,
    }


_QUESTION_TOTALS = """
    WITH v AS (
      SELECT question_id, sum(views)::int AS views FROM question_views_daily
      WHERE day BETWEEN :since AND :until GROUP BY question_id
    ), f AS (
      SELECT question_id, sum(helpful)::int AS helpful, sum(unhelpful)::int AS unhelpful
      FROM question_feedback_daily
      WHERE day BETWEEN :since AND :until GROUP BY question_id
    )
    SELECT q.id, q.slug, q.title, coalesce(v.views, 0) AS views,
           coalesce(f.helpful, 0) AS helpful, coalesce(f.unhelpful, 0) AS unhelpful
    FROM v FULL JOIN f USING (question_id) JOIN questions q ON q.id = question_id
    WHERE q.deleted_at IS NULL
    ORDER BY {sort} DESC, q.slug LIMIT :limit
"""
_REASONS = """
    SELECT f.question_id, r.key AS reason, sum(r.value::int)::int AS count
    FROM question_feedback_daily f, jsonb_each_text(f.reasons) r
    WHERE f.day BETWEEN :since AND :until AND f.question_id = ANY(:ids)
    GROUP BY f.question_id, r.key
    ORDER BY count DESC, reason
"""


async def _reasons(
    session: AsyncSession, span: Window, ids: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The unhelpful votes' reasons of these questions in the window, by count then reason,
    ``MAX_REASONS`` at most each."""
    by_question: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if not ids:
        return by_question
    rows = await session.execute(text(_REASONS), {**span.params(), "ids": ids})
    for r in rows:
        kept = by_question[r.question_id]
        if len(kept) < MAX_REASONS:
            kept.append({"reason": r.reason, "count": r.count})
    return by_question


def _totals(
    row: Any, reasons: list[dict[str, Any]], audiences: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "questionId": row.id,
        "slug": row.slug,
        "title": row.title,
        "views": row.views,
        "helpful": row.helpful,
        "unhelpful": row.unhelpful,
        "helpfulShare": _rate(row.helpful, row.helpful + row.unhelpful),
        "unhelpfulReasons": reasons,
        "byAudience": audiences,
    }


async def questions_analytics(
    session: AsyncSession, span: Window, *, sort: str, limit: int
) -> dict[str, Any]:
    """Questions (not deleted) with views or votes in the window, by the ``sort`` count
    (then slug), at most ``limit``."""
    statement = _QUESTION_TOTALS.format(sort=SORTS[sort])
    rows = (await session.execute(text(statement), {**span.params(), "limit": limit})).all()
    ids = [r.id for r in rows]
    reasons = await _reasons(session, span, ids)
    audiences = await by_audience.views_of(session, span.params(), ids)
    return {
        "since": span.since.isoformat(),
        "until": span.until.isoformat(),
        "sort": sort,
        "questions": [_totals(r, reasons.get(r.id, []), audiences.get(r.id, [])) for r in rows],
        "byAudience": await by_audience.all_views(session, span.params()),
    }


_QUESTION_DAYS = """
    SELECT day, views, 0 AS helpful, 0 AS unhelpful FROM question_views_daily
    WHERE question_id = :id AND day BETWEEN :since AND :until
    UNION ALL
    SELECT day, 0, helpful, unhelpful FROM question_feedback_daily
    WHERE question_id = :id AND day BETWEEN :since AND :until
"""


async def question_analytics(session: AsyncSession, ref: str, span: Window) -> dict[str, Any]:
    """One live question's totals and its days (every day of the window, zeros included,
    oldest first); 404 ``question_not_found`` for no such question in the org."""
    question = await load(session, ref)
    params = {**span.params(), "id": question.id}
    days = {day: [0, 0, 0] for day in span.days()}
    for r in await session.execute(text(_QUESTION_DAYS), params):
        counts = days[r.day]
        counts[0] += r.views
        counts[1] += r.helpful
        counts[2] += r.unhelpful
    views, helpful, unhelpful = (sum(c[n] for c in days.values()) for n in range(3))
    reasons = await _reasons(session, span, [question.id])
    audiences = await by_audience.views_of(session, span.params(), [question.id])
    row = _Totals(question.id, question.slug, question.title, views, helpful, unhelpful)
    return {
        **_totals(row, reasons.get(question.id, []), audiences.get(question.id, [])),
        "since": span.since.isoformat(),
        "until": span.until.isoformat(),
        "days": [
            {"day": day.isoformat(), "views": c[0], "helpful": c[1], "unhelpful": c[2]}
            for day, c in days.items()
        ],
    }


@dataclass(frozen=True)
class _Totals:
    id: str
    slug: str
    title: str
    views: int
    helpful: int
    unhelpful: int


_SEARCH_TRENDS = """
    SELECT query, day, sum({column})::int AS n FROM search_daily
    WHERE day BETWEEN :since AND :until AND query = ANY(:keys)
    GROUP BY query, day
"""
_UNHELPFUL_TRENDS = """
    SELECT question_id, day, unhelpful AS n FROM question_feedback_daily
    WHERE day BETWEEN :since AND :until AND question_id = ANY(:keys)
"""

_TRENDS = {
    "searches": _SEARCH_TRENDS.format(column="searches"),
    "no_results": _SEARCH_TRENDS.format(column="no_results"),
    "unhelpful": _UNHELPFUL_TRENDS,
}


async def daily_trends(
    session: AsyncSession, span: Window, kind: str, keys: list[str]
) -> dict[str, list[int]]:
    """Day-by-day counts (every day of the window, oldest first) of these queries'
    ``searches`` or ``no_results``, or of these questions' ``unhelpful`` votes."""
    trends = {key: [0] * len(span.days()) for key in keys}
    if not keys:
        return trends
    statement = _TRENDS[kind]
    rows = await session.execute(text(statement), {**span.params(), "keys": keys})
    for key, day, n in rows.tuples():
        trends[key][(day - span.since).days] += n
    return trends
