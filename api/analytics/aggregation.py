"""Daily aggregates of content analytics, recomputed from the raw rows (no Quart: the periodic
actor in ``tasks/`` calls ``aggregate_recent`` once per org).

- ``search_daily`` (day, locale, query): searches, clicks (searches followed by an opened
  result) and no_results (searches that found nothing), from ``search_events``.
- ``question_feedback_daily`` (question, day): helpful and unhelpful votes of the help
  center's "Was this helpful?" by the day of the vote (``question_votes.created_at``, UTC),
  and ``reasons`` ``{reason: count}`` of the unhelpful votes that gave one (the
  ``MAX_REASONS`` most frequent, ties by reason).
- ``search_audience_daily`` (day, locale, audience): the same searches per reader audience
  (``api.analytics.by_audience``, issue 39).

Only the days whose raw rows are all still kept are recomputed: the last ``RAW_DAYS`` (today
included, UTC). Older days keep their aggregates (two years) and are never touched, since
their raw rows are gone or partly gone. Within the window an aggregate is exactly what the raw
rows give: a row whose raw rows are all gone (a vote replaced on a later day) is deleted, and
a row already right is not written again, so running twice writes nothing.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from api.analytics import by_audience

RAW_DAYS = 90  # raw search events are kept 90 days (votes are rows of their own, kept)
MAX_REASONS = 20

# The raw rows of the window, by UTC day. Bounds are times (the ``at`` / ``created_at``
# indexes serve them). The deletes correlate on equalities only (day, locale, query; question,
# day), so PostgreSQL runs them as one hash anti-join over the window's raw rows, not one
# probe of the raw rows per aggregate row.
_SEARCH_UPSERT = text(
    """
    INSERT INTO search_daily AS d (day, locale, query, searches, clicks, no_results)
    SELECT (e.at AT TIME ZONE 'UTC')::date, e.locale, e.query, count(*),
           count(e.clicked_question_id), count(*) FILTER (WHERE e.results = 0)
    FROM search_events e
    WHERE e.at >= :start AND e.at < :end
    GROUP BY 1, 2, 3
    ON CONFLICT (day, locale, query) DO UPDATE
    SET searches = excluded.searches, clicks = excluded.clicks, no_results = excluded.no_results
    WHERE (d.searches, d.clicks, d.no_results)
          IS DISTINCT FROM (excluded.searches, excluded.clicks, excluded.no_results)
    RETURNING 1
    """
)
_SEARCH_DELETE = text(
    """
    DELETE FROM search_daily d
    WHERE d.day >= :first AND d.day <= :last
      AND NOT EXISTS (
        SELECT 1 FROM search_events e
        WHERE e.at >= :start AND e.at < :end
          AND (e.at AT TIME ZONE 'UTC')::date = d.day
          AND e.locale = d.locale AND e.query = d.query
      )
    RETURNING 1
    """
)
_FEEDBACK_UPSERT = text(
    """
    WITH votes AS (
      SELECT v.question_id, (v.created_at AT TIME ZONE 'UTC')::date AS day, v.helpful, v.reason
      FROM question_votes v
      WHERE v.created_at >= :start AND v.created_at < :end
    ),
    totals AS (
      SELECT question_id, day, count(*) FILTER (WHERE helpful) AS helpful,
             count(*) FILTER (WHERE NOT helpful) AS unhelpful
      FROM votes GROUP BY question_id, day
    ),
    ranked AS (
      SELECT question_id, day, reason, count(*) AS n,
             row_number() OVER (PARTITION BY question_id, day ORDER BY count(*) DESC, reason)
               AS rank
      FROM votes
      WHERE NOT helpful AND reason IS NOT NULL AND reason <> ''
      GROUP BY question_id, day, reason
    ),
    reasons AS (
      SELECT question_id, day, jsonb_object_agg(reason, n) AS reasons
      FROM ranked WHERE rank <= :max_reasons GROUP BY question_id, day
    )
    INSERT INTO question_feedback_daily AS f (question_id, day, helpful, unhelpful, reasons)
    SELECT t.question_id, t.day, t.helpful, t.unhelpful, coalesce(r.reasons, '{}'::jsonb)
    FROM totals t LEFT JOIN reasons r USING (question_id, day)
    WHERE true
    ON CONFLICT (question_id, day) DO UPDATE
    SET helpful = excluded.helpful, unhelpful = excluded.unhelpful, reasons = excluded.reasons
    WHERE (f.helpful, f.unhelpful, f.reasons)
          IS DISTINCT FROM (excluded.helpful, excluded.unhelpful, excluded.reasons)
    RETURNING 1
    """
)
_FEEDBACK_DELETE = text(
    """
    DELETE FROM question_feedback_daily f
    WHERE f.day >= :first AND f.day <= :last
      AND NOT EXISTS (
        SELECT 1 FROM question_votes v
        WHERE v.created_at >= :start AND v.created_at < :end
          AND (v.created_at AT TIME ZONE 'UTC')::date = f.day
          AND v.question_id = f.question_id
      )
    RETURNING 1
    """
)


def raw_window(today: date) -> tuple[date, date]:
    """The first and last day whose raw rows are all kept: ``RAW_DAYS`` days to ``today``."""
    return today - timedelta(days=RAW_DAYS - 1), today


async def aggregate_recent(session: AsyncSession, today: date) -> int:
    """Recompute the bound org's aggregates of the days of ``raw_window(today)``; returns the
    rows written (inserted, changed or deleted): 0 when they were already right. The caller
    owns the transaction."""
    first, last = raw_window(today)
    params: dict[str, Any] = {
        "first": first,
        "last": last,
        "start": datetime.combine(first, time.min, UTC),
        "end": datetime.combine(last + timedelta(days=1), time.min, UTC),
        "max_reasons": MAX_REASONS,
    }
    written = 0
    # The rows each statement returns, not its rowcount: on Citus an INSERT ... SELECT counts
    # the rows it offered, updated or not (issue 27).
    for statement in (_SEARCH_UPSERT, _SEARCH_DELETE, _FEEDBACK_UPSERT, _FEEDBACK_DELETE):
        written += len((await session.execute(statement, params)).all())
    return written + await by_audience.aggregate_searches(session, params)
