"""``/api/v1/{org}/analytics/…`` and ``/questions/{idOrSlug}/analytics`` (read; issue 17):
content analytics from the daily aggregates. Publishable keys are refused (403)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, tag, validate_querystring

from api.analytics import service
from api.analytics.schemas import (
    QuestionAnalytics,
    QuestionsAnalytics,
    QuestionsQuery,
    SearchAnalytics,
    SearchesQuery,
    WindowQuery,
)
from api.http.binding import db, requires_scope
from api.schemas import Envelope
from tenancy.clock import utcnow

analytics = Blueprint("analytics", __name__)
Result = tuple[dict[str, Any], int]
TAGS = ["analytics"]


def _window(query_args: WindowQuery) -> service.Window:
    return service.window(query_args.since, query_args.until, utcnow().date())


@analytics.get("/analytics/searches")
@requires_scope("read")
@validate_querystring(SearchesQuery)
@document_response(Envelope[SearchAnalytics])
@tag(TAGS)
async def search_analytics(query_args: SearchesQuery) -> Result:
    """Top search queries with their click-through, and the queries that found nothing, each
    by count (then query), at most ``limit`` (1..100, default 20) of each. Window: ``since``
    to ``until`` (UTC dates, both included; default the last 30 days, at most 400 days back);
    ``locale`` keeps the searches made in that locale; ``source`` those made through the help
    center (``help_center``), a publishable key (``api``) or the MCP server (``mcp``), counted
    from the raw searches (kept 90 days)."""
    data = await service.search_analytics(
        db(),
        _window(query_args),
        locale=query_args.locale,
        limit=query_args.limit,
        source=query_args.source,
    )
    return {"data": data}, 200


@analytics.get("/analytics/questions")
@requires_scope("read")
@validate_querystring(QuestionsQuery)
@document_response(Envelope[QuestionsAnalytics])
@tag(TAGS)
async def questions_analytics(query_args: QuestionsQuery) -> Result:
    """Questions with views or votes in the window, with their counts.

    Each has its views, helpful and unhelpful votes, the share helpful and the unhelpful
    votes' reasons; ordered by ``sort`` (views, helpful or unhelpful; then slug), at most
    ``limit`` (1..100, default 20); deleted questions are left out."""
    data = await service.questions_analytics(
        db(), _window(query_args), sort=query_args.sort, limit=query_args.limit
    )
    return {"data": data}, 200


@analytics.get("/questions/<ref>/analytics")
@requires_scope("read")
@validate_querystring(WindowQuery)
@document_response(Envelope[QuestionAnalytics])
@tag(TAGS)
async def question_analytics(ref: str, query_args: WindowQuery) -> Result:
    """One question's totals in the window and its counts day by day (every day, zeros
    included, oldest first)."""
    data = await service.question_analytics(db(), ref, _window(query_args))
    return {"data": data}, 200
