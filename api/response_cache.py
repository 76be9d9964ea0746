"""Cached bodies of the hot reads (question and category lists and single reads), per API
process, keyed on one of the org's content generations (``tenancy/generations.py``): a single
read of a question on ``items``, every other read on ``lists``.

- A cacheable GET reads its generation in the same Redis round trip as its rate-limit counter
  (``api/binding.py``) and serves the body stored for (org, path and query, generation) when
  there is one (a hit of a secret key's read is answered by ``api/fast_path.py``, before
  Quart). A write bumps the generations it changed right after its commit, before its
  response is sent, so a client always reads its own writes, and every process sees a write on
  its next request. A create of a question bumps only ``lists``: the cached single reads of
  the other questions survive it (only 200 bodies are cached, so no cached read can be of the
  new question); any other write of questions, translations or categories bumps both.
- Redis unreachable: nothing is served from the cache (reads go to PostgreSQL).
- Bounded by ``FAQ_RESPONSE_CACHE_MB`` per process (LRU); 0 turns the cache off.
- Spellings of one search share an entry: the key holds the search as ``prefix_query`` makes
  it and the other parameters in a canonical order (``cache_key``). An entry records the
  spelling it was made for (its ``variant``) and is served to other spellings only when
  ``shared`` (no next-page cursor in it: a cursor is signed for the ``q`` as spelled).
- Reads are served in a locale (``api/locales.py``: ``?locale=`` or ``Accept-Language``): the
  key ends with the chosen locale, so a body made in ``fr`` is never served for ``de`` or the
  default, and an entry keeps the headers that depend on the body (``Content-Language``).
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

from api.search import prefix_query

CACHEABLE_ENDPOINTS = frozenset(
    {
        "api.questions.list_questions",
        "api.questions.get_question",
        "api.categories.list_categories",
        "api.categories.get_category",
    }
)

# The reads served in a negotiated locale (``api.binding.negotiate_locale``).
LOCALIZED_ENDPOINTS = CACHEABLE_ENDPOINTS

MAX_Q = 200  # the list endpoints' limit on q: a longer one is refused, so never shared


def cache_key(
    path: str, args: Iterable[tuple[str, str]], full_path: str, locale: str = ""
) -> tuple[str, str]:
    """The cache key of a read in ``locale`` and its variant (``q`` as spelled, or ``""``).

    With a usable ``q`` (each parameter once, no cursor, a searchable word in a valid ``q``),
    the key is the path, then ``q`` normalized, then the other parameters sorted (it starts
    with a NUL, which no request path does); otherwise the request's own path and query
    string (``full_path``), unshared."""
    items = list(args)
    params = dict(items)
    q = params.get("q")
    if q is None or "cursor" in params or len(items) != len(params) or len(q) > MAX_Q:
        return f"{full_path}\x00{locale}", ""
    normalized = prefix_query(q) if "\x00" not in q else None
    if normalized is None:
        return f"{full_path}\x00{locale}", ""
    others = sorted((k, v) for k, v in items if k != "q")
    canonical = "&".join(f"{k}={v}" for k, v in others)
    return f"\x00{path}\x00{normalized}\x00{canonical}\x00{locale}", q


def has_next_page(body: bytes) -> bool:
    """Whether a body carries a next-page cursor (no pagination in it: False; a body that
    is not a JSON object: True, so it is never shared)."""
    try:
        meta = json.loads(body).get("meta") or {}
        return (meta.get("pagination") or {}).get("cursor") is not None
    except (ValueError, AttributeError):
        return True  # unreadable: never share it


Headers = tuple[tuple[str, str], ...]


class Cached(NamedTuple):
    body: bytes
    headers: Headers


class ResponseCache:
    def __init__(self, max_bytes: int, ttl_seconds: float) -> None:
        self.max_bytes = max_bytes
        self.ttl = ttl_seconds
        # (schema, key) -> (generation, body, expiry, variant, shared, headers)
        self._entries: OrderedDict[
            tuple[str, str], tuple[bytes, bytes, float, str, bool, Headers]
        ] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def get(self, schema: str, path: str, generation: bytes, variant: str = "") -> Cached | None:
        key = (schema, path)
        entry = self._entries.get(key)
        if (
            entry is None
            or entry[0] != generation
            or entry[2] < time.monotonic()
            or (entry[3] != variant and not entry[4])
        ):
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return Cached(entry[1], entry[5])

    def holds(self, schema: str, path: str, variant: str = "") -> bool:
        """Whether an entry for the read is kept (of any generation; not counted): worth
        reading the current generation for (``api.fast_path``)."""
        entry = self._entries.get((schema, path))
        return (
            entry is not None and entry[2] >= time.monotonic() and (entry[3] == variant or entry[4])
        )

    def put(
        self,
        schema: str,
        path: str,
        generation: bytes,
        body: bytes,
        variant: str = "",
        *,
        shared: bool = True,
        headers: Headers = (),
    ) -> None:
        if len(body) > self.max_bytes // 8:
            return
        key = (schema, path)
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= len(old[1])
        expiry = time.monotonic() + self.ttl
        self._entries[key] = (generation, body, expiry, variant, shared, headers)
        self._bytes += len(body)
        while self._bytes > self.max_bytes and self._entries:
            _, (_, dropped, *_) = self._entries.popitem(last=False)
            self._bytes -= len(dropped)

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
