"""Entity tags (issue 30): what a response's ``ETag`` is and whether a request's ``If-Match``
or ``If-None-Match`` names it. No Quart here: ``api.http.conditional`` (the Quart side),
``api.http.binding`` and ``api.http.fast_path`` (before Quart) share these rules.

- A single resource's tag is strong: a digest of the exact body bytes a ``GET`` of it sends
  (``strong``), so it changes whenever the representation does, the locale it is served in
  included.
- A list's tag is weak. A list the response cache keys on the org's ``lists`` generation
  (``tenancy.generations``) gets ``W/"g<generation>.<read key>"`` (``list_tag``): known before
  the list is read, so a match is answered 304 without reading PostgreSQL. Any other list (or
  one read while the generation is unknown) gets a weak digest of its body (``weak``).
- ``If-None-Match`` compares weakly (RFC 9110 13.1.2), ``If-Match`` strongly (13.1.1): a weak
  tag never satisfies ``If-Match``; ``*`` matches any current representation.

Parsing the header lists is werkzeug's (``parse_etags``).
"""

from __future__ import annotations

import asyncio
import hashlib

from werkzeug.http import parse_etags, quote_etag, unquote_etag

ETAG = "ETag"
IF_MATCH = "If-Match"
IF_NONE_MATCH = "If-None-Match"
LIST_PREFIX = b'{"data":['  # how every list body starts (orjson, ``api.http.pagination``)
# Bodies above this are digested in a thread (about 0.3 ms of the loop at most on a loaded
# machine): a page of revisions may hold megabytes.
OFF_LOOP_BYTES = 64 * 1024
# Headers a 304 keeps (RFC 9110 15.4.5: those a 200 would send that describe it); the body's
# own (Content-Type, Content-Length) go.
DROPPED_ON_304 = ("Content-Type", "Content-Length", "Content-Encoding")


def _digest(body: bytes) -> str:
    # SHA-256 (hardware-assisted here: about twice BLAKE2b's speed), 128 bits kept.
    return hashlib.sha256(body).hexdigest()[:32]


def strong(body: bytes) -> str:
    """The strong tag of a representation: a digest of its bytes."""
    return quote_etag(_digest(body))


def weak(body: bytes) -> str:
    """A weak tag of a list read without its generation: a digest of its bytes."""
    return quote_etag(_digest(body), weak=True)


def is_list(body: bytes) -> bool:
    """A list's body (``{"data": [...]}``, with or without ``meta``)."""
    return body.startswith(LIST_PREFIX)


def for_body(body: bytes) -> str:
    """The tag of a response body: weak for a list, strong otherwise."""
    return weak(body) if is_list(body) else strong(body)


async def for_body_off_loop(body: bytes) -> str:
    """``for_body``, in a thread for a large body (hashlib lets go of the GIL)."""
    if len(body) <= OFF_LOOP_BYTES:
        return for_body(body)
    return await asyncio.to_thread(for_body, body)


def list_tag(generation: bytes, read_key: str) -> str:
    """The weak tag of a list keyed on the org's generation: the generation and the read's
    cache key (``api.http.response_cache.read_key``: path, parameters, locale and audience)."""
    return quote_etag(f"g{generation.decode('ascii', 'replace')}.{read_key[:24]}", weak=True)


def none_match(header: str | None, tag: str | None) -> bool:
    """``If-None-Match: header`` is false for a representation tagged ``tag`` (weak
    comparison; ``*`` matches any): the answer is 304 (or 412 for a write)."""
    if not header or tag is None:
        return False
    value, _ = unquote_etag(tag)
    return value is not None and parse_etags(header).contains_weak(value)


def match(header: str, tag: str | None) -> bool:
    """``If-Match: header`` holds for the current representation ``tag`` (None: there is
    none): strong comparison, ``*`` matches any current representation."""
    if tag is None:
        return False
    value, is_weak = unquote_etag(tag)
    if value is None or is_weak:
        return False
    return parse_etags(header).contains(value)


# The lists whose tag is their generation's (``list_tag``): the cacheable lists.
LIST_READS = frozenset({"api.questions.list_questions", "api.categories.list_categories"})
