"""HTTP routes of questions: validate, call one read (``queries``) or write (``service``), return
the public shape."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from quart import Blueprint, Response, current_app, g, request
from quart_schema import (
    document_querystring,
    document_response,
    validate_querystring,
    validate_request,
)

from api.analytics import recording
from api.audiences.visibility import reader_audiences
from api.errors import InsufficientScope, QuestionNotFound, ValidationFailed, field_error
from api.http import conditional_locks as locks
from api.http.binding import (
    chosen_locale,
    client_address,
    current_org,
    cursors,
    db,
    localized,
    public_audience,
    requires_scope,
)
from api.http.conditional import conditional
from api.http.pagination import list_body, list_json
from api.questions import bulk_updates, queries, read_json, service
from api.questions.schemas import (
    IDEMPOTENCY_KEY_MAX,
    QuestionCreate,
    QuestionListQuery,
    QuestionOut,
    QuestionUpdate,
    ReadQuery,
    RevisionListQuery,
    RevisionOut,
)
from api.schemas import Envelope, IdsBody, ListEnvelope, UpdatedCount
from tenancy.keys import is_public
from tenancy.principal import Principal

questions = Blueprint("questions", __name__, url_prefix="/questions")
Result = tuple[dict[str, Any], int]
IDEMPOTENCY_HEADER = "X-Idempotency-Key"
LIST_ENDPOINT = "api.questions.list_questions"
READ_ENDPOINT = "api.questions.get_question"


def _stamp(org: Principal) -> tuple[str, float]:
    raw = recording.api_visitor(org.key_fingerprint, client_address())
    return recording.stamp(current_app.extensions, org.id, raw)


@questions.after_request
async def record_public_read(response: Response) -> Response:
    """Content analytics (``api.analytics.recording``): a publishable key's search (``q``,
    first page) and single read (the result it opened), served from the cache or not (a hit
    answers before the view: its count or id is then read from the body at the flush, off the
    request's path). Secret keys' reads are never recorded."""
    org = g.get("org")
    if (
        response.status_code != 200
        or request.method != "GET"
        or org is None
        or not is_public(org.scopes)
        or not recording.enabled(current_app.extensions)
    ):
        return response
    endpoint = request.endpoint
    if endpoint == LIST_ENDPOINT:
        q = request.args.get("q")
        query = recording.normalise_query(q) if q and "cursor" not in request.args else ""
        if query:
            results = g.get("analytics_results")
            body = await response.get_data() if results is None else None
            visitor, at = _stamp(org)
            recording.recorder_for(current_app.extensions).search(
                org.id,
                source=recording.API,
                locale=chosen_locale(),
                query=query,
                visitor=visitor,
                at=at,
                results=results,
                body=body if isinstance(body, bytes) else None,
                audiences=recording.audiences_of(org),
            )
    elif endpoint == READ_ENDPOINT:
        question_id = g.get("analytics_question")
        body = await response.get_data() if question_id is None else None
        visitor, at = _stamp(org)
        recording.recorder_for(current_app.extensions).open(
            org.id,
            visitor=visitor,
            at=at,
            question_id=question_id,
            body=body if isinstance(body, bytes) else None,
            audiences=recording.audiences_of(org),
        )
    return response


def _idempotency_key() -> str | None:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not 1 <= len(key) <= IDEMPOTENCY_KEY_MAX:
        raise ValidationFailed(
            f"{IDEMPOTENCY_HEADER} must be 1 to {IDEMPOTENCY_KEY_MAX} characters.",
            details=field_error(IDEMPOTENCY_HEADER, f"1 to {IDEMPOTENCY_KEY_MAX} characters"),
        )
    return key


def _body_hash(data: QuestionCreate) -> str:
    """Hash of the validated body, so key order, spacing and time notation do not matter."""
    canonical = orjson.dumps(
        data.model_dump(mode="json", by_alias=True, exclude_unset=True),
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(canonical).hexdigest()


@questions.get("")
@requires_scope("read", public=True)
@localized
@validate_querystring(QuestionListQuery)
@document_response(ListEnvelope[QuestionOut])
async def list_questions(query_args: QuestionListQuery) -> Result | Response:
    """List questions, by order then id; with q, best match first (title above answer).
    Served in ``locale`` (else Accept-Language); ``translation`` with ``locale``: the
    translators' worklist. A publishable key lists published questions only (another
    ``status`` is an empty list) and has no worklist (403)."""
    status = query_args.status
    if public_audience():
        if query_args.translation is not None:
            raise InsufficientScope("The translators' worklist requires the 'read' scope.")
        if status not in (None, "published"):
            return list_body([], query_args.limit, None), 200
        status = "published"
    if query_args.translation is not None and query_args.locale is None:
        raise ValidationFailed(
            "translation needs a locale.", details=field_error("translation", "needs locale")
        )
    locale = chosen_locale()
    # A cursor is signed for its list: the locale and the worklist filter are part of it.
    kind = "questions" if query_args.q is None else f"questions:q:{query_args.q}"
    if query_args.translation is not None:
        kind = f"{kind}:translation:{query_args.translation}:{locale}"
    elif query_args.q is not None:
        kind = f"{kind}:locale:{locale}"
    after = cursors().decode(kind, query_args.cursor) if query_args.cursor else None
    if (
        query_args.q is None
        and query_args.category is None
        and query_args.translation is None
        and query_args.external_id is None
    ):
        # The hot list: each item's JSON comes from PostgreSQL, passed through as it is.
        texts, last = await read_json.plain_page_json(
            db(),
            limit=query_args.limit,
            after=after,
            status=status,
            locale=locale,
            drafts=not public_audience(),
            audiences=reader_audiences(current_org()),
        )
        cursor = cursors().encode(kind, last) if last is not None else None
        g.analytics_results = len(texts)
        return _json_response(list_json(texts, query_args.limit, cursor))
    items, last = await queries.list_questions(
        db(),
        limit=query_args.limit,
        after=after,
        q=query_args.q,
        category=query_args.category,
        status=status,
        locale=locale,
        translation=query_args.translation,
        external_id=query_args.external_id,
        drafts=not public_audience(),
        audiences=reader_audiences(current_org()),
    )
    cursor = cursors().encode(kind, last) if last is not None else None
    g.analytics_results = len(items)  # a publishable key's search: recorded with its count
    return list_body(items, query_args.limit, cursor), 200


@questions.post("")
@requires_scope("write")
@validate_request(QuestionCreate)
@document_response(Envelope[QuestionOut], 201)
async def create_question(data: QuestionCreate) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Create a question; idempotent with an X-Idempotency-Key header (kept 24 hours)."""
    key = _idempotency_key()
    created = await service.create_question(
        db(),
        current_org(),
        data,
        idempotency_key=key,
        request_hash=_body_hash(data) if key is not None else "",
    )
    headers = {"Idempotent-Replayed": "true"} if created.replayed else {}
    return created.body, created.status, headers


@questions.post("/reorder")
@requires_scope("write")
@validate_request(IdsBody)
@document_response(Envelope[UpdatedCount])
async def reorder_questions(data: IdsBody) -> Result:
    """Give the listed questions orders 0, 1, 2… (all or nothing)."""
    return {
        "data": {"updated": await bulk_updates.reorder_questions(db(), current_org(), data.ids)}
    }, 200


@questions.get("/<ref>")
@requires_scope("read", public=True)
@localized
@document_querystring(ReadQuery)
@document_response(Envelope[QuestionOut])
async def get_question(ref: str) -> Response:
    """Get a question by id or slug, served in ``?locale=`` (else Accept-Language). To a
    publishable key only a published question its reader may read exists (issue 39)."""
    status, locale, question_id, body = await read_json.get_question_json(
        db(),
        ref,
        chosen_locale(),
        drafts=not public_audience(),
        audiences=reader_audiences(current_org()),
    )
    if status != "published" and public_audience():  # also in the SQL: kept as a second lock
        raise QuestionNotFound()
    g.analytics_question = question_id
    response = _json_response(body)
    response.headers["Content-Language"] = locale
    return response


def _json_response(body: bytes) -> Response:
    """A body already in JSON (built in SQL): what the app's JSON provider would have sent."""
    return current_app.response_class(body, content_type="application/json")


@questions.patch("/<ref>")
@requires_scope("write")
@validate_request(QuestionUpdate)
@document_response(Envelope[QuestionOut])
@conditional(locks.QUESTION, echoes_get=True)
async def update_question(ref: str, data: QuestionUpdate) -> Result:
    """Update any subset of the question's fields; writes one revision."""
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    return {"data": await service.update_question(db(), current_org(), ref, changes)}, 200


@questions.delete("/<ref>")
@requires_scope("write")
@conditional(locks.QUESTION)
async def delete_question(ref: str) -> tuple[str, int]:
    """Soft-delete a question (purged after 30 days; its slug is free at once)."""
    await service.delete_question(db(), current_org(), ref)
    return "", 204


@questions.get("/<ref>/revisions")
@requires_scope("read")
@validate_querystring(RevisionListQuery)
@document_response(ListEnvelope[RevisionOut])
async def list_revisions(ref: str, query_args: RevisionListQuery) -> Result:
    """The question's revisions, newest first (the 50 newest are kept)."""
    after = cursors().decode("revisions", query_args.cursor) if query_args.cursor else None
    items, last = await queries.list_revisions(db(), ref, limit=query_args.limit, after=after)
    cursor = cursors().encode("revisions", last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@questions.post("/<ref>/revisions/<revision_id>/restore")
@requires_scope("write")
@document_response(Envelope[QuestionOut])
async def restore_revision(ref: str, revision_id: str) -> Result:
    """Apply a revision's snapshot to the question as a new PATCH."""
    return {"data": await service.restore_revision(db(), current_org(), ref, revision_id)}, 200
