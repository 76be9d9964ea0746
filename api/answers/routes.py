"""``/api/v1/{org}/answers`` (read; publishable keys too) and ``/synonyms`` (admin): issue 28."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, current_app
from quart_schema import document_response, validate_querystring, validate_request

from api.analytics import recording
from api.answers import service, similar, synonyms
from api.answers.schemas import (
    AnswerOut,
    AnswersQuery,
    SimilarOut,
    SimilarQuery,
    SynonymsOut,
    SynonymsQuery,
    SynonymsUpdate,
)
from api.http.binding import (
    chosen_locale,
    client_address,
    current_org,
    db,
    public_audience,
    requires_scope,
)
from api.http.pagination import list_body
from api.schemas import Envelope, ListEnvelope
from tenancy.keys import is_public
from tenancy.principal import Principal

answers = Blueprint("answers", __name__)
Result = tuple[dict[str, Any], int]


@answers.get("/answers")
@requires_scope("read", public=True)
@validate_querystring(AnswersQuery)
@document_response(ListEnvelope[AnswerOut])
async def find_answers(query_args: AnswersQuery) -> Result:
    """The published questions that best answer ``q``, a question in the reader's own words.

    Best first, at most ``limit`` (1..20, default 5), each with a ``score`` (0..1), an HTML
    ``snippet`` whose matched words are in ``<mark>``, and ``confident``: true on the first
    item only, when it very probably answers the question (show it directly; else list).
    Nothing relevant is an empty ``data``. Typos are forgiven and the org's synonyms apply;
    ``category`` keeps answers from that category and those under it (docs/answers.md).
    """
    org = current_org()
    locale = chosen_locale()
    found = await service.answers_for(
        db(),
        q=query_args.q,
        locale=locale,
        limit=query_args.limit,
        category=query_args.category,
        drafts=not is_public(org.scopes),
    )
    _record_search(org, locale, query_args.q, len(found))
    return list_body([answer.public() for answer in found], query_args.limit, None), 200


def _record_search(org: Principal, locale: str, q: str, results: int) -> None:
    """A publishable key's question is a reader's search (content analytics), like ``?q=``."""
    if not is_public(org.scopes) or not recording.enabled(current_app.extensions):
        return
    query = recording.normalise_query(q)
    if not query:
        return
    raw = recording.api_visitor(org.key_fingerprint, client_address())
    visitor, at = recording.stamp(current_app.extensions, org.id, raw)
    recording.recorder_for(current_app.extensions).search(
        org.id,
        source=recording.API,
        locale=locale,
        query=query,
        visitor=visitor,
        at=at,
        results=results,
    )


@answers.get("/questions/<ref>/similar")
@requires_scope("read")
@validate_querystring(SimilarQuery)
@document_response(ListEnvelope[SimilarOut])
async def similar_questions(ref: str, query_args: SimilarQuery) -> Result:
    """The questions most like this one (any status), best first: likely duplicates.

    By meaning when the question has an embedding, else by its title's words (published
    questions); at most ``limit`` (1..20, default 5), each with a ``score`` (0..1).
    """
    found = await similar.similar_questions(
        db(),
        ref,
        chosen_locale(),
        query_args.limit,
        published_only=False,
        drafts=not public_audience(),
    )
    return list_body([item.public() for item in found], query_args.limit, None), 200


@answers.get("/synonyms")
@requires_scope("admin")
@validate_querystring(SynonymsQuery)
@document_response(Envelope[SynonymsOut])
async def get_synonyms(query_args: SynonymsQuery) -> Result:
    """The org's synonym groups in ``locale`` (default: the org's default locale)."""
    return {"data": await synonyms.get_synonyms(db(), current_org(), query_args.locale)}, 200


@answers.put("/synonyms")
@requires_scope("admin")
@validate_request(SynonymsUpdate)
@document_response(Envelope[SynonymsOut])
async def put_synonyms(data: SynonymsUpdate) -> Result:
    """Replace the synonym groups of ``locale``: words or phrases that mean the same.

    Each group has 2 to 20 members of 1 to 100 characters; the plan caps the groups per
    locale (402 ``plan_limit_reached``). They apply to ``/answers`` and the help center.
    """
    org = current_org()
    return {"data": await synonyms.put_synonyms(db(), org, data.locale, data.groups)}, 200
