"""Cached bodies of the hot reads (question and category lists and single reads), per API
process, keyed on the org's content generation (``tenancy/generations.py``).

- A cacheable GET reads the generation in the same Redis round trip as its rate-limit counter
  (``api/binding.py``) and serves the body stored for (org, path and query, generation) when
  there is one. A write bumps the generation right after its commit, before its response is
  sent, so a client always reads its own writes, and every process sees a write on its next
  request.
- Redis unreachable: nothing is served from the cache (reads go to PostgreSQL).
- Bounded by ``FAQ_RESPONSE_CACHE_MB`` per process (LRU); 0 turns the cache off.
"""

from __future__ import annotations

import time
from collections import OrderedDict

CACHEABLE_ENDPOINTS = frozenset(
    {
        "api.questions.list_questions",
        "api.questions.get_question",
        "api.categories.list_categories",
        "api.categories.get_category",
    }
)


class ResponseCache:
    def __init__(self, max_bytes: int, ttl_seconds: float) -> None:
        self.max_bytes = max_bytes
        self.ttl = ttl_seconds
        self._entries: OrderedDict[tuple[str, str], tuple[bytes, bytes, float]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def get(self, schema: str, path: str, generation: bytes) -> bytes | None:
        key = (schema, path)
        entry = self._entries.get(key)
        if entry is None or entry[0] != generation or entry[2] < time.monotonic():
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, schema: str, path: str, generation: bytes, body: bytes) -> None:
        if len(body) > self.max_bytes // 8:
            return
        key = (schema, path)
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= len(old[1])
        self._entries[key] = (generation, body, time.monotonic() + self.ttl)
        self._bytes += len(body)
        while self._bytes > self.max_bytes and self._entries:
            _, (_, dropped, _) = self._entries.popitem(last=False)
            self._bytes -= len(dropped)

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
