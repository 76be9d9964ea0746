"""Cached bodies of the hot reads (question and category lists and single reads), per org,
invalidated by a per-org generation number in Redis.

- Every tenant transaction that writes ``questions`` or ``categories`` (any statement through
  a tenant session, or an ORM flush of those tables; text SQL counts as a write) bumps the
  org's generation (``INCR faq:gen:<schema>``) right after its commit, in whatever process it
  ran (API request, worker, CLI): ``tenancy.db`` calls ``note_write`` / ``bump_after_commit``.
- A cacheable GET reads the generation in the same Redis round trip as its rate-limit counter
  and serves the body stored for (org, path and query, generation) when there is one. A write
  bumps before its response is sent, so a client always reads its own writes, and every
  process sees a write on its next request.
- Redis unreachable: nothing is served from the cache (reads go to PostgreSQL). A bump that
  fails leaves other processes' entries valid until their TTL (``FAQ_RESPONSE_CACHE_SECONDS``).
- Bounded by ``FAQ_RESPONSE_CACHE_MB`` per process (LRU); 0 turns the cache off.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import OrderedDict
from typing import Any

import redis.asyncio as aioredis
import structlog

log = structlog.get_logger(__name__)

CACHED_TABLES = frozenset({"questions", "categories"})
CACHEABLE_ENDPOINTS = frozenset(
    {
        "api.questions.list_questions",
        "api.questions.get_question",
        "api.categories.list_categories",
        "api.categories.get_category",
    }
)
WROTE_KEY = "tenant_wrote_cached_tables"


def generation_key(schema: str) -> str:
    return f"faq:gen:{schema}"


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


# ---- bumping generations (any process) -----------------------------------------------------

_clients: dict[int, aioredis.Redis] = {}


def _client() -> aioredis.Redis | None:
    from tenancy.settings import get_settings

    url = get_settings().redis_url
    if not url:
        return None
    loop_id = id(asyncio.get_running_loop())
    client = _clients.get(loop_id)
    if client is None:
        client = aioredis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
        _clients[loop_id] = client
    return client


async def bump(schema: str) -> None:
    client = _client()
    if client is None:
        return
    try:
        await client.incr(generation_key(schema))
    except Exception:  # Redis down: other processes' entries live until their TTL
        log.warning("response_cache_bump_failed", exc_info=True)
        _local_caches_clear()


async def initial_generation(schema: str) -> bytes | None:
    """An org seen for the first time (or after Redis lost its keys): a random start, so no
    entry cached under an earlier generation can match again."""
    client = _client()
    if client is None:
        return None
    key = generation_key(schema)
    try:
        await client.set(key, str(random.getrandbits(62)), nx=True)
        value = await client.get(key)
        return value if isinstance(value, bytes) else None
    except Exception:
        return None


_local: list[ResponseCache] = []


def register_local(cache: ResponseCache) -> None:
    _local.append(cache)


def _local_caches_clear() -> None:
    for cache in _local:
        cache.clear()


def note_write(info: dict[str, Any], table_name: str | None) -> None:
    """Called by tenancy.db for each write of a tenant session (None: unknown table)."""
    if table_name is None or table_name in CACHED_TABLES:
        info[WROTE_KEY] = True
