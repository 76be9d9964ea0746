"""``/api/v1/{org}/reviews``: the drafts waiting for (or done with) review (issue 30)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_querystring

from api.http.binding import cursors, db, requires_scope
from api.http.pagination import list_body
from api.questions import review
from api.questions.draft_schemas import DraftOut, ReviewListQuery
from api.schemas import ListEnvelope

reviews = Blueprint("reviews", __name__, url_prefix="/reviews")


@reviews.get("")
@requires_scope("read")
@validate_querystring(ReviewListQuery)
@document_response(ListEnvelope[DraftOut])
async def list_reviews(query_args: ReviewListQuery) -> tuple[dict[str, Any], int]:
    """Drafts by review state (default ``pending``), optionally those asking a given member
    (``reviewer``), oldest change first."""
    kind = f"reviews:{query_args.state}:{query_args.reviewer or ''}"
    after = cursors().decode(kind, query_args.cursor) if query_args.cursor else None
    items, last = await review.list_reviews(
        db(),
        state=query_args.state,
        reviewer=query_args.reviewer,
        limit=query_args.limit,
        after=after,
    )
    cursor = cursors().encode(kind, last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200
