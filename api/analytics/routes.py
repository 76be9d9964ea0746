"""``/api/v1/{org}/analytics/…`` and ``/questions/{idOrSlug}/analytics`` (read; issue 17):
content analytics from the daily aggregates; ``/analytics/gaps`` (read) and the acceptance of a
suggested synonym (admin), issue 38. Publishable keys are refused (403)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, tag, validate_querystring

from api.analytics import gaps, service
from api.analytics.schemas import (
    AcceptedSuggestion,
    GapsAnalytics,
    GapsQuery,
    QuestionAnalytics,
    QuestionsAnalytics,
    QuestionsQuery,
    SearchAnalytics,
    SearchesQuery,
    WindowQuery,
)
from api.http.binding import current_org, db, requires_scope
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
    from the raw searches (kept 90 days). ``byAudience``: the searches per audience of the
    readers who made them (``null``: no audience; a reader counts under each of its
    audiences). Secret keys only: a publishable key is refused (issue 39)."""
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
    ``limit`` (1..100, default 20); deleted questions are left out. ``byAudience``, per
    question and over every question: distinct readers a day who opened it, per audience
    (``null``: no audience), help-center pages and publishable keys' single reads."""
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


@analytics.get("/analytics/gaps")
@requires_scope("read")
@validate_querystring(GapsQuery)
@document_response(Envelope[GapsAnalytics])
@tag(TAGS)
async def gaps_analytics(query_args: GapsQuery) -> Result:
    """What readers searched for and did not find: content gaps and suggested synonyms.

    ``contentGaps``: clusters of alike searches that found nothing, with counts and examples.
    ``suggestedSynonyms``: words readers replaced before opening an answer (a search that
    opened nothing, then the same reader's next search within 10 minutes that did), seen at
    least twice and not already joined by the org's synonyms or the support lexicon; accept
    one with ``POST /analytics/gaps/suggestions/{id}/accept``. From the raw searches (kept 90
    days) of the window, the 100,000 most recent at most; ``limit`` (1..100, default 20)
    rows of each list; ``locale`` keeps one language."""
    data = await gaps.gaps_report(
        db(), _window(query_args), locale=query_args.locale, limit=query_args.limit
    )
    return {"data": data}, 200


@analytics.post("/analytics/gaps/suggestions/<suggestion>/accept")
@requires_scope("admin")
@validate_querystring(WindowQuery)
@document_response(Envelope[AcceptedSuggestion])
@tag(TAGS)
async def accept_suggestion(suggestion: str, query_args: WindowQuery) -> Result:
    """Add a suggested synonym as a synonym group of its locale (audited, capped by plan).

    The suggestion is found again in the window (``since``/``until`` as for ``GET
    /analytics/gaps``); 404 ``suggestion_not_found`` when it is not there. Returns the
    suggestion and the locale's synonym groups after it.
    """
    data = await gaps.accept(db(), current_org(), _window(query_args), suggestion)
    return {"data": data}, 200
