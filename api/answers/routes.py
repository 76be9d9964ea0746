"""``/api/v1/{org}/answers`` (read; publishable keys too), ``/synonyms`` (admin): issue 28, and
``/synonyms/lexicon`` (admin): the support lexicon's switches, issue 38."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, current_app
from quart_schema import document_response, validate_querystring, validate_request

from api.analytics import recording
from api.answers import service, similar, synonyms
from api.answers.schemas import (
    AnswerOut,
    AnswersQuery,
    LexiconOut,
    LexiconUpdate,
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
    localized,
    public_audience,
    requires_scope,
)
from api.http.pagination import list_body
from api.schemas import Envelope, ListEnvelope
from tenancy.keys import is_public
from tenancy.principal import Principal

answers = Blueprint("answers", __name__)
Result = tuple[dict[str, Any], int]
Served = tuple[dict[str, Any], int, dict[str, str]]


@answers.get("/answers")
@requires_scope("read", public=True)
@localized
@validate_querystring(AnswersQuery)
@document_response(ListEnvelope[AnswerOut])
async def find_answers(query_args: AnswersQuery) -> Served:
    """The published questions that best answer ``q``, a question in the reader's own words.

    Best first, at most ``limit`` (1..20, default 5), each with a ``score`` (0..1), an HTML
    ``snippet`` whose matched words are in ``<mark>``, and ``confident``: true on the first
    item only, when it very probably answers the question (show it directly; else list).
    Nothing relevant is an empty ``data``. Typos are forgiven and the org's synonyms apply;
    ``category`` keeps answers from that category and those under it (docs/answers.md).
    Searched and served in ``locale`` (else Accept-Language): a question's translation in
    it, else the question's own text, as the help center searches.
    """
    org = current_org()
    locale = chosen_locale()
    found = await service.answers_for(
        db(),
        org,
        q=query_args.q,
        locale=locale,
        limit=query_args.limit,
        category=query_args.category,
    )
    _record_search(org, locale, query_args.q, len(found))
    items = [answer.public() for answer in found]
    return list_body(items, query_args.limit, None), 200, served_in(locale, items)


def served_in(locale: str, items: list[dict[str, Any]]) -> dict[str, str]:
    """``Content-Language``: the negotiated locale when every result is served in it (a
    question without a translation in it is served in its own language: then the results
    mix languages and, like a list's, the response names none)."""
    if all(item["question"]["locale"] == locale for item in items):
        return {"Content-Language": locale}
    return {}


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
        audiences=recording.audiences_of(org),
    )


@answers.get("/questions/<ref>/similar")
@requires_scope("read")
@localized
@validate_querystring(SimilarQuery)
@document_response(ListEnvelope[SimilarOut])
async def similar_questions(ref: str, query_args: SimilarQuery) -> Served:
    """The questions most like this one (any status), best first: likely duplicates.

    By meaning when the question has an embedding, else by its title's words (published
    questions); at most ``limit`` (1..20, default 5), each with a ``score`` (0..1). Served in
    ``locale`` (else Accept-Language).
    """
    locale = chosen_locale()
    found = await similar.similar_questions(
        db(),
        ref,
        locale,
        query_args.limit,
        published_only=False,
        drafts=not public_audience(),
    )
    items = [item.public() for item in found]
    return list_body(items, query_args.limit, None), 200, served_in(locale, items)


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


@answers.get("/synonyms/lexicon")
@requires_scope("admin")
@validate_querystring(SynonymsQuery)
@document_response(Envelope[LexiconOut])
async def get_lexicon(query_args: SynonymsQuery) -> Result:
    """The support lexicon's groups in ``locale`` (default: the org's default locale).

    Built-in groups of the paraphrases support questions use ("log in" / "sign in"),
    applied like the org's synonyms, each with ``enabled``: whether the org uses it.
    """
    return {"data": await synonyms.get_lexicon(db(), current_org(), query_args.locale)}, 200


@answers.put("/synonyms/lexicon")
@requires_scope("admin")
@validate_request(LexiconUpdate)
@document_response(Envelope[LexiconOut])
async def put_lexicon(data: LexiconUpdate) -> Result:
    """Switch off the support lexicon's groups ``disabled`` in ``locale``; the others are on.

    An id the lexicon does not have in that locale's language is 400 ``validation_failed``.
    The org's own synonym groups are left as they are.
    """
    org = current_org()
    return {"data": await synonyms.put_lexicon(db(), org, data.locale, data.disabled)}, 200
