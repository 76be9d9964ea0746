"""Content analytics per audience (issue 39, no Quart): what readers of each audience searched
for and opened, counted into daily aggregates of one row per audience, never one per reader.

- The audiences an event counts under: the reader's slugs that name one of the org's live
  audiences when it is counted (a token may carry any slug; only the org's audiences, at most
  the plan's cap, make rows), once under each; a reader left with none counts under ``''``,
  "no audience" (shown as ``null``): anonymous readers and readers of none of the org's
  audiences.
- Searches: ``search_audience_daily`` (day, locale, audience) recomputed from the raw
  ``search_events`` of the days whose raw rows are kept, like ``search_daily``
  (``aggregate_searches``, run by ``api.analytics.aggregation.aggregate_recent``).
- Views: distinct readers a day per question and audience (``question_audience_views_daily``),
  counted from the per-day Redis set the recorder fills on each open
  (``recording.audience_views_key``): a help-center question page or a publishable key's
  single read. Written as the higher of the stored and the counted value, so a recount
  never double counts (``collect_views``, run by ``analytics-collect`` for today and
  yesterday).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date
from typing import Any

import redis.asyncio as aioredis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from api.analytics.recording import audience_views_key

NO_AUDIENCE = ""
STORE_BATCH = 1_000  # rows per statement
_LIVE = "SELECT slug FROM audiences WHERE deleted_at IS NULL"

# Each raw search of the window once per audience it counts under ('' when none).
_COUNTED = f"""
counted AS (
  SELECT (e.at AT TIME ZONE 'UTC')::date AS day, e.locale, e.source, e.results,
         e.clicked_question_id, coalesce(a.slug, '') AS audience
  FROM search_events e
  LEFT JOIN LATERAL (
    SELECT s.slug FROM unnest(e.audiences) AS s(slug) WHERE s.slug IN ({_LIVE})
  ) a ON true
  WHERE e.at >= :start AND e.at < :end
)
"""
_SEARCH_UPSERT = text(
    f"""
    WITH {_COUNTED}
    INSERT INTO search_audience_daily AS d (day, locale, audience, searches, clicks, no_results)
    SELECT day, locale, audience, count(*), count(clicked_question_id),
           count(*) FILTER (WHERE results = 0)
    FROM counted GROUP BY 1, 2, 3
    ON CONFLICT (day, locale, audience) DO UPDATE
    SET searches = excluded.searches, clicks = excluded.clicks, no_results = excluded.no_results
    WHERE (d.searches, d.clicks, d.no_results)
          IS DISTINCT FROM (excluded.searches, excluded.clicks, excluded.no_results)
    RETURNING 1
    """
)
_SEARCH_DELETE = text(
    f"""
    WITH {_COUNTED}
    DELETE FROM search_audience_daily d
    WHERE d.day >= :first AND d.day <= :last
      AND NOT EXISTS (
        SELECT 1 FROM counted c
        WHERE c.day = d.day AND c.locale = d.locale AND c.audience = d.audience
      )
    RETURNING 1
    """
)


async def aggregate_searches(session: AsyncSession, params: dict[str, Any]) -> int:
    """Recompute ``search_audience_daily`` for the days ``first`` to ``last`` (raw rows from
    ``start`` to ``end``); returns the rows written (0 when they were already right)."""
    written = 0
    for statement in (_SEARCH_UPSERT, _SEARCH_DELETE):
        written += len((await session.execute(statement, params)).all())
    return written


# ---- views ---------------------------------------------------------------------------------

_STORE_VIEWS = text(
    """
    INSERT INTO question_audience_views_daily AS d (question_id, day, audience, views)
    SELECT q.id, :day, x.audience, x.views
    FROM unnest(CAST(:questions AS text[]), CAST(:audiences AS text[]), CAST(:views AS int[]))
         AS x(question_id, audience, views)
    JOIN questions q ON q.id = x.question_id
    ON CONFLICT (question_id, day, audience) DO UPDATE
    SET views = greatest(d.views, excluded.views)
    WHERE d.views < excluded.views
    RETURNING 1
    """
)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def count_views(
    client: aioredis.Redis, org_id: str, day: date, live: set[str]
) -> Counter[tuple[str, str]]:
    """Distinct readers per (question, audience) of one org's day, each reader under its
    audiences of ``live`` (``NO_AUDIENCE`` when none)."""
    readers: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    async for member in client.sscan_iter(audience_views_key(org_id, day), count=1_000):
        parts = _text(member).split(" ")
        if len(parts) == 3:
            question_id, audience, reader = parts
            readers[(question_id, reader)].add(audience)
    counts: Counter[tuple[str, str]] = Counter()
    for (question_id, _), audiences in readers.items():
        for audience in (audiences & live) or {NO_AUDIENCE}:
            counts[(question_id, audience)] += 1
    return counts


async def collect_views(
    session: AsyncSession, client: aioredis.Redis, org_id: str, day: date
) -> int:
    """Count one org's audience views of ``day`` into ``question_audience_views_daily``
    (questions deleted since are skipped); returns the rows written. The caller commits."""
    live = set((await session.execute(text(_LIVE))).scalars())
    counts = sorted((await count_views(client, org_id, day, live)).items())
    written = 0
    for at in range(0, len(counts), STORE_BATCH):
        batch = counts[at : at + STORE_BATCH]
        params = {
            "day": day,
            "questions": [q for (q, _), _ in batch],
            "audiences": [a for (_, a), _ in batch],
            "views": [n for _, n in batch],
        }
        written += len((await session.execute(_STORE_VIEWS, params)).all())
    return written


# ---- reads ---------------------------------------------------------------------------------

_SEARCHES = """
    SELECT audience, sum(searches)::int AS searches, sum(clicks)::int AS clicks,
           sum(no_results)::int AS no_results
    FROM search_audience_daily WHERE day BETWEEN :since AND :until {locale}
    GROUP BY audience ORDER BY searches DESC, audience
"""
_SEARCHES_OF_SOURCE = f"""
    WITH {_COUNTED}
    SELECT audience, count(*)::int AS searches, count(clicked_question_id)::int AS clicks,
           count(*) FILTER (WHERE results = 0)::int AS no_results
    FROM counted WHERE source = :source {{locale}}
    GROUP BY audience ORDER BY searches DESC, audience
"""
_VIEWS = """
    SELECT v.question_id, v.audience, sum(v.views)::int AS views
    FROM question_audience_views_daily v
    WHERE v.day BETWEEN :since AND :until AND v.question_id = ANY(:ids)
    GROUP BY v.question_id, v.audience ORDER BY views DESC, v.audience
"""
_ALL_VIEWS = """
    SELECT v.audience, sum(v.views)::int AS views
    FROM question_audience_views_daily v JOIN questions q ON q.id = v.question_id
    WHERE v.day BETWEEN :since AND :until AND q.deleted_at IS NULL
    GROUP BY v.audience ORDER BY views DESC, v.audience
"""


def _audience(stored: str) -> str | None:
    return stored or None


# The reads take a window as ``api.analytics.service.Window`` gives it: ``since`` and ``until``
# (days), ``start`` and ``end`` (times).


async def searches(
    session: AsyncSession, window: dict[str, Any], *, locale: str | None, source: str | None
) -> list[dict[str, Any]]:
    """The window's searches per audience (most first, then audience; ``null``: no
    audience), from the daily aggregates, or with ``source`` from the raw searches."""
    where = "AND locale = :locale" if locale is not None else ""
    params: dict[str, Any] = {**window, "locale": locale, "source": source}
    statement = (_SEARCHES_OF_SOURCE if source is not None else _SEARCHES).format(locale=where)
    return [
        {
            "audience": _audience(r.audience),
            "searches": r.searches,
            "clicks": r.clicks,
            "noResults": r.no_results,
        }
        for r in await session.execute(text(statement), params)
    ]


async def views_of(
    session: AsyncSession, window: dict[str, Any], ids: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """Each question's views per audience in the window (most first, then audience)."""
    by_question: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if ids:
        for r in await session.execute(text(_VIEWS), {**window, "ids": ids}):
            by_question[r.question_id].append({"audience": _audience(r.audience), "views": r.views})
    return by_question


async def all_views(session: AsyncSession, window: dict[str, Any]) -> list[dict[str, Any]]:
    """The window's views per audience over every live question (most first)."""
    rows = await session.execute(text(_ALL_VIEWS), window)
    return [{"audience": _audience(r.audience), "views": r.views} for r in rows]
