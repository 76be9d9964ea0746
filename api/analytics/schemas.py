"""Query strings and responses of the analytics endpoints (issue 17)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from api.schemas import QueryArgs, ResponseModel

MAX_ROWS = 100
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}(?:$|[Tt ])")


def _to_day(value: Any) -> Any:
    """``YYYY-MM-DD``, or an ISO 8601 timestamp (its UTC date when it has an offset)."""
    if not isinstance(value, str):
        return value
    try:
        if _ISO_DAY.match(value) is None:
            raise ValueError(value)
        if len(value) == 10:
            return date.fromisoformat(value)
        moment = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise ValueError("must be a date (YYYY-MM-DD) or an ISO 8601 timestamp") from None
    return (moment.astimezone(UTC) if moment.tzinfo is not None else moment).date()


# A day (UTC). A window is ``since`` to ``until``, both included (``api.analytics.service``).
Day = Annotated[
    date,
    BeforeValidator(_to_day),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^\d{4}-\d{2}-\d{2}([Tt ].*)?$",
            "description": "A date (YYYY-MM-DD), or an ISO 8601 timestamp: its UTC date",
            "examples": ["2026-11-01"],
        }
    ),
]
Limit = Annotated[int, Field(ge=1, le=MAX_ROWS)]


class WindowQuery(QueryArgs):
    since: Day | None = None  # default: 29 days before until (30 days in all)
    until: Day | None = None  # default: today (UTC); never after today


class SearchesQuery(WindowQuery):
    locale: str | None = Field(default=None, min_length=1, max_length=35)
    # Where the searches were made (issue 31): the help center, a publishable key, an MCP tool.
    source: Literal["help_center", "api", "mcp"] | None = None
    limit: Limit = 20  # rows of each list


class QuestionsQuery(WindowQuery):
    sort: Literal["views", "helpful", "unhelpful"] = "views"
    limit: Limit = 20


class QueryCount(ResponseModel):
    query: str
    searches: int


class TopQuery(QueryCount):
    clicks: int
    click_through_rate: float  # clicks / searches


class AudienceSearches(ResponseModel):
    """The searches of readers of one audience (issue 39). ``audience``: its slug, or null for
    readers of no audience (anonymous, or of none of the org's audiences). A reader of several
    audiences counts once under each."""

    audience: str | None
    searches: int
    clicks: int
    no_results: int


class AudienceViews(ResponseModel):
    """Distinct readers a day who opened the question (a help-center page or a publishable
    key's single read), summed over the window, of one audience (null: no audience); a reader
    of several audiences counts once under each (issue 39)."""

    audience: str | None
    views: int


class SearchAnalytics(ResponseModel):
    since: str
    until: str
    top_queries: list[TopQuery]
    no_results: list[QueryCount]
    by_audience: list[AudienceSearches]  # most searches first, then audience


class ReasonCount(ResponseModel):
    reason: str
    count: int


class QuestionTotals(ResponseModel):
    question_id: str
    slug: str
    title: str
    views: int
    helpful: int
    unhelpful: int
    helpful_share: float | None  # helpful / (helpful + unhelpful); null without votes
    unhelpful_reasons: list[ReasonCount]
    by_audience: list[AudienceViews]  # most views first, then audience


class QuestionsAnalytics(ResponseModel):
    since: str
    until: str
    sort: str
    questions: list[QuestionTotals]
    by_audience: list[AudienceViews]  # every live question's, not only those listed


class DayCounts(ResponseModel):
    day: str
    views: int
    helpful: int
    unhelpful: int


class QuestionAnalytics(QuestionTotals):
    since: str
    until: str
    days: list[DayCounts]  # every day of the window, oldest first


class GapsQuery(WindowQuery):
    locale: str | None = Field(default=None, min_length=1, max_length=35)
    limit: Limit = 20  # rows of each list


class GapExample(ResponseModel):
    query: str
    searches: int


class ContentGap(ResponseModel):
    locale: str
    query: str  # the cluster's most searched query
    searches: int  # searches of every query of the cluster
    queries: int  # distinct queries in the cluster
    examples: list[GapExample]


class Reformulation(ResponseModel):
    query: str
    reformulated_as: str
    searches: int


class SynonymSuggestion(ResponseModel):
    id: str
    locale: str
    members: list[str]
    searches: int
    examples: list[Reformulation]
    opened_question_id: str


class GapsAnalytics(ResponseModel):
    since: str
    until: str
    searches_examined: int
    content_gaps: list[ContentGap]
    suggested_synonyms: list[SynonymSuggestion]


class SynonymsOfLocale(ResponseModel):
    locale: str
    groups: list[list[str]]
    updated_at: str | None


class AcceptedSuggestion(ResponseModel):
    suggestion: SynonymSuggestion
    synonyms: SynonymsOfLocale
