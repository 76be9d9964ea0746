"""Cached bodies of the hot reads (question and category lists and single reads), per API
process, keyed on one of the org's content generations (``tenancy/generations.py``): a single
read of a question on ``items``, every other read on ``lists``.

- A cacheable GET reads its generation in the same Redis round trip as its rate-limit counter
  (``api/http/binding.py``) and serves the body stored for (org, path and query, generation) when
  there is one (a hit of a secret key's read is answered by ``api/http/fast_path.py``, before
  Quart). A write bumps the generations it changed right after its commit, before its
  response is sent, so a client always reads its own writes, and every process sees a write on
  its next request. A create of a question bumps only ``lists``: the cached single reads of
  the other questions survive it (only 200 bodies are cached, so no cached read can be of the
  new question); any other write of questions, translations or categories bumps both.
- Redis unreachable: nothing is served from the cache (reads go to PostgreSQL).
- Bounded by ``FAQ_RESPONSE_CACHE_MB`` per process (LRU); 0 turns the cache off. An entry
  counts its body, its key, its headers and a fixed overhead (``entry_size``), so tiny bodies
  cannot hold many times the budget.
- The key is a digest of the path and the parameters as the view reads them, each name and
  value encoded (``read_key``, issue 26): ``?category=billing%26limit%3D50`` is never
  ``?category=billing&limit=50``, nor ``/questions/a%3Fx`` ``/questions/a?x?``.
- Spellings of one search share an entry: the key holds the search as ``prefix_query`` makes
  it and the other parameters in a canonical order. An entry records the
  spelling it was made for (its ``variant``) and is served to other spellings only when
  ``shared`` (no next-page cursor in it: a cursor is signed for the ``q`` as spelled).
- A read declared ``@localized`` (``api.http.binding``; each of these reads is) is served in
  a negotiated locale (``api/locales.py``: ``?locale=`` or ``Accept-Language``): the key holds
  the chosen locale, so a body made in ``fr`` is never served for ``de`` or the default, and
  an entry keeps the headers that depend on the body (``Content-Language``).
"""

from __future__ import annotations

import hashlib
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

MAX_Q = 200  # the list endpoints' limit on q: a longer one is refused, so never shared


def read_key(path: str, args: Iterable[tuple[str, str]], locale: str = "") -> tuple[str, str]:
    """The cache key of a read in ``locale`` and its variant (``q`` as spelled, or ``""``).

    The key is a digest of the path and the query as the view reads them (the parsed
    parameters, each name and value encoded on its own: ``_digest``), never of the
    request's text, so a value holding ``&``, ``=``, ``?`` or a NUL cannot spell another
    read. With a usable ``q`` (each parameter once, no cursor, a searchable word in a valid
    ``q``), ``q`` is normalized and the other parameters sorted (the variant: ``q`` as
    spelled); otherwise the parameters are kept in the order read (no variant)."""
    items = list(args)
    params = dict(items)
    q = params.get("q")
    normalized = None
    if q is not None and "cursor" not in params and len(items) == len(params) and len(q) <= MAX_Q:
        normalized = prefix_query(q) if "\x00" not in q else None
    if q is None or normalized is None:
        return _digest("read", "", path, items, locale), ""
    others = sorted((k, v) for k, v in items if k != "q")
    return _digest("search", "", path, [("q", normalized), *others], locale), q


def page_key(site: str, path: str, args: Iterable[tuple[str, str]], audience: str = "") -> str:
    """The cache key of a help-center page: a digest of the site (``scheme://host``), the
    path and the parameters in the order read, each encoded as in ``read_key`` (no search is
    shared across spellings: a page shows ``q`` as typed), and what its reader may read
    (``binding.audience_part``, issue 39)."""
    return _digest("page", site, path, list(args), audience)


# JSON strings are an unambiguous encoding of any text (quotes, separators, NULs and lone
# surrogates escaped), and about four times faster than ``urlencode`` on the hot path.
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def _digest(kind: str, site: str, path: str, items: list[tuple[str, str]], locale: str) -> str:
    """A fixed-size key (an entry's bookkeeping stays small whatever the query's length):
    SHA-256 of the parts encoded as one JSON array, so that none can run into the next."""
    text = _ENCODER.encode((kind, site, path, items, locale))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


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


# What an entry costs beside its texts (the ordered dict's slot, the tuples, the objects'
# headers), measured at about 300 bytes: counted so that many tiny bodies cannot hold many
# times the budget.
ENTRY_OVERHEAD = 320


def entry_size(
    key: tuple[str, str], generation: bytes, body: bytes, variant: str, headers: Headers
) -> int:
    """The bytes an entry counts against the budget: its texts and ``ENTRY_OVERHEAD``."""
    texts = len(key[0]) + len(key[1]) + len(generation) + len(body) + len(variant)
    return texts + sum(len(n) + len(v) for n, v in headers) + ENTRY_OVERHEAD


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
        reading the current generation for (``api.http.fast_path``)."""
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
        self._drop(key)
        expiry = time.monotonic() + self.ttl
        self._entries[key] = (generation, body, expiry, variant, shared, headers)
        self._bytes += entry_size(key, generation, body, variant, headers)
        while self._bytes > self.max_bytes and self._entries:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[str, str]) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            generation, body, _, variant, _, headers = old
            self._bytes -= entry_size(key, generation, body, variant, headers)

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
