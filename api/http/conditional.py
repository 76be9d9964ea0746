"""Conditional requests (issue 30: no lost updates), the Quart side; the tags are
``api.http.etags``'.

- Every ``200`` ``GET`` under ``/api/v1`` carries an ``ETag`` (``tag_response``): strong for a
  single resource, weak for a list (``api.http.etags``), and is answered ``304 Not Modified`` when
  ``If-None-Match`` names it (``answer_not_modified``, after the commit and the response cache
  took the body). A list the response cache keys on the org's generation is answered 304 by
  ``api.http.binding`` before it is read; a cache hit by ``api.http.fast_path`` before Quart.
- A write route marked ``@conditional(lock)`` (``PATCH``, ``PUT``, ``DELETE`` of one resource)
  honours ``If-Match`` and ``If-None-Match`` (``check_preconditions``, run by the view once
  quart-schema validated its input, so a bad body is 400 first): in the request's
  transaction it takes ``lock`` (``api.http.conditional_locks``), reads the resource's current
  representation as ``GET`` of the same URL would answer it (the ``GET`` view itself, in the
  locale the request negotiates), and compares. A failed precondition is 412
  ``precondition_failed`` with the current resource in ``data`` and its ``ETag``. The lock
  is held until the write commits, so of two writes sent with the same ``If-Match`` one
  succeeds and the other gets 412.
- A successful ``PATCH`` or ``PUT`` of a marked route carries the ``ETag`` a ``GET`` would
  give right after it (the resource read again in the same transaction, by the id the
  response names, since a PATCH may change the slug the URL used; or, for a route marked
  ``echoes_get`` whose body is that ``GET``'s in the locale it serves, the body's own tag),
  so a client can chain writes without reading in between.
- ``RFC 9110 13.2.1``: preconditions are evaluated only when the request would otherwise
  succeed: a resource that does not exist (or belongs to another org) stays 404. A ``PUT``
  creating a resource (``absent``: the ``GET``'s not-found error) has no current
  representation: ``If-Match`` fails, ``If-None-Match: *`` holds.
- Help-center pages (``tag_page``, on the ``hc`` blueprint) carry a strong ``ETag`` of their
  bytes and answer 304 alike, except a page holding a per-visitor part (the question page's
  feedback form, whose CSRF token changes every second and whose view is counted).

To make a route conditional, add one line right above its ``async def`` (below
``@validate_request``: the body is checked first), naming the lock its service takes first
(``conditional_locks``: ``QUESTION``, ``MEMBER``, ``row(Model, "<route argument>", "<id
prefix>")``, ...)::

    @conditional(locks.QUESTION, absent=(DraftNotFound,))

Its URL's ``GET`` route must answer the single resource.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any, NamedTuple, TypeVar, cast

import orjson
from quart import Response, current_app, g, request
from quart.wrappers.response import DataBody
from werkzeug.exceptions import HTTPException

from api.errors import PreconditionFailed, ServiceError
from api.http import etags
from api.http.binding import current_org, db, is_localized, negotiate_locale
from api.http.conditional_locks import Lock

F = TypeVar("F", bound=Callable[..., Any])
CONDITIONAL_ATTRIBUTE = "_faq_conditional"
WRITES = frozenset({"PATCH", "PUT", "DELETE"})
READS = frozenset({"GET", "HEAD"})
# ``g`` entries: the tag ``api.http.binding`` made for a list keyed on the generation.
LIST_TAG = "list_etag"


@dataclass(frozen=True)
class Conditional:
    lock: Lock
    absent: tuple[type[ServiceError], ...] = ()
    echoes_get: bool = False


class Representation(NamedTuple):
    tag: str
    body: bytes


def conditional(
    lock: Lock, *, absent: tuple[type[ServiceError], ...] = (), echoes_get: bool = False
) -> Callable[[F], F]:
    """The write honours ``If-Match`` / ``If-None-Match`` against the representation its
    URL's ``GET`` answers, compared under ``lock``; ``absent``: the errors of that ``GET``
    that mean a ``PUT`` creates the resource; ``echoes_get``: its ``200`` body is byte for
    byte what that ``GET`` answers right after it, when served in the resource's own
    ``locale`` (the write's tag is then its body's, not a second read's)."""

    spec = Conditional(lock, absent, echoes_get)

    def decorator(func: F) -> F:
        @wraps(func)
        async def checked(*args: Any, **kwargs: Any) -> Any:
            await check_preconditions(spec)
            return await func(*args, **kwargs)

        setattr(checked, CONDITIONAL_ATTRIBUTE, spec)
        return cast(F, checked)

    return decorator


def _marked() -> Conditional | None:
    view = current_app.view_functions.get(request.endpoint or "")
    spec: Conditional | None = getattr(view, CONDITIONAL_ATTRIBUTE, None)
    return spec


def _get_view() -> Callable[..., Awaitable[Any]]:
    """The ``GET`` view of this URL, its locale negotiated (``g.locale``) when it is
    ``@localized``."""
    adapter = current_app.url_map.bind("")
    try:
        rule, _ = adapter.match(request.path, method="GET", return_rule=True)
    except HTTPException:
        raise RuntimeError(f"{request.endpoint} is conditional but its URL has no GET") from None
    view = current_app.view_functions[rule.endpoint or ""]
    if is_localized(view) and g.get("locale") is None:
        negotiate_locale(current_org())
    return current_app.ensure_async(view)


async def _represent(body: bytes) -> Representation:
    return Representation(await etags.for_body_off_loop(body), body)


async def _read(args: dict[str, Any]) -> Representation:
    """The resource as the ``GET`` route of this URL answers it now, in this transaction."""
    view = _get_view()
    response = cast(Response, await current_app.make_response(await view(**args)))
    return await _represent(await response.get_data(as_text=False))


async def _current(spec: Conditional) -> Representation | None:
    """Lock the resource, then read it (None: a ``PUT`` would create it). The lock gives the
    body itself when its row holds it (``conditional_locks``); else the ``GET`` is read."""
    args = dict(request.view_args or {})
    _get_view()  # the locale the GET serves
    body = await spec.lock(db(), current_org(), args, g.get("locale"))
    if body is not None:
        return await _represent(body)
    try:
        return await _read(args)
    except spec.absent:
        if request.method != "PUT":
            raise
        return None


async def check_preconditions(spec: Conditional) -> None:
    """``If-Match`` / ``If-None-Match`` of a marked write, run by its view once its input is
    valid (a bad body is 400 whatever the headers say): 412 when one fails."""
    if request.method not in WRITES:
        return
    if_match = request.headers.get(etags.IF_MATCH)
    if_none_match = request.headers.get(etags.IF_NONE_MATCH)
    if if_match is None and if_none_match is None:
        return
    current = await _current(spec)
    tag = current.tag if current is not None else None
    failed = (if_match is not None and not etags.match(if_match, tag)) or etags.none_match(
        if_none_match, tag
    )
    if failed:
        raise PreconditionFailed(
            current=orjson.loads(current.body).get("data") if current is not None else None,
            headers={etags.ETAG: tag} if tag is not None else {},
        )


async def tag_response(response: Response) -> Response:
    """The ``ETag`` of a read, or of a marked write's result (``after_request``, before the
    commit: the response cache keeps the tag with the body)."""
    if etags.ETAG in response.headers or not isinstance(response.response, DataBody):
        return response
    if request.method in READS:
        if response.status_code == 200 and response.mimetype == "application/json":
            tag = g.pop(LIST_TAG, None)
            if tag is None:
                tag = await etags.for_body_off_loop(await response.get_data(as_text=False))
            response.headers[etags.ETAG] = tag
    elif (
        request.method in WRITES - {"DELETE"}
        and response.status_code in (200, 201)
        and g.get("db") is not None
        and (spec := _marked()) is not None
    ):
        tag = await _tag_after_write(spec, await response.get_data(as_text=False))
        if tag is not None:
            response.headers[etags.ETAG] = tag
    return response


async def _tag_after_write(spec: Conditional, body: bytes) -> str | None:
    """The tag a ``GET`` gives after the write: its body's own when the write echoes that
    ``GET`` in the locale it serves, else read again by the id the response names."""
    args = dict(request.view_args or {})
    try:
        data = orjson.loads(body).get("data")
        if spec.echoes_get and isinstance(data, dict):
            _get_view()
            if data.get("locale") == g.get("locale"):
                return (await _represent(body)).tag
        if isinstance(data, dict) and isinstance(data.get("id"), str) and "ref" in args:
            args["ref"] = data["id"]
        return (await _read(args)).tag
    except (ServiceError, orjson.JSONDecodeError, AttributeError):
        return None  # the write stands; its response just carries no tag


def not_modified(response: Response) -> Response:
    """``response`` as 304: no body, the headers that describe the representation kept."""
    response.status_code = 304
    response.set_data(b"")
    for name in etags.DROPPED_ON_304:
        response.headers.pop(name, None)
    return response


async def answer_not_modified(response: Response) -> Response:
    """A read whose ``ETag`` the client names in ``If-None-Match``: 304 (``after_request``,
    after the commit). A 304 made before (``api.http.binding``'s of a list) loses its body's
    headers here."""
    if response.status_code == 304:
        return not_modified(response)
    if (
        request.method in READS
        and response.status_code == 200
        and etags.none_match(
            request.headers.get(etags.IF_NONE_MATCH), response.headers.get(etags.ETAG)
        )
    ):
        return not_modified(response)
    return response


async def tag_page(response: Response) -> Response:
    """A help-center page: strong ``ETag`` of its bytes, 304 on ``If-None-Match``
    (``after_request`` of the ``hc`` blueprint). A page with a per-visitor part (a feedback
    form's token, a counted view) is left as it is."""
    reader = g.get("hc_reader")
    if (
        request.method not in READS
        or response.status_code != 200
        or not isinstance(response.response, DataBody)
        or g.get("hc_question") is not None
        or (reader is not None and getattr(reader, "personal", False))
    ):
        return response
    response.headers[etags.ETAG] = await etags.for_body_off_loop(
        await response.get_data(as_text=False)
    )
    return await answer_not_modified(response)
