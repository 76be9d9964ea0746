"""Query embeddings, cached per process in a least-recently-used map bounded by bytes
(``FAQ_EMBEDDINGS_QUERY_CACHE_MB``): readers ask the same few questions again and again, and
an endpoint embedder costs a network round trip per query."""

from __future__ import annotations

import re
import threading
from array import array
from collections import OrderedDict

from api.answers.embedder import Embedder, current_embedder
from tenancy.settings import get_settings

# Per entry besides the key's text and the vector's bytes: the tuple, the dict slot, objects.
ENTRY_OVERHEAD_BYTES = 200
_SPACES = re.compile(r"\s+")


def normalised_query(text: str) -> str:
    """Whitespace collapsed and trimmed: the cache key, and what is embedded."""
    return _SPACES.sub(" ", text).strip()


class QueryEmbeddingCache:
    """``(model, text) -> float32 bytes``, at most ``max_bytes`` counted as key text +
    vector bytes + ``ENTRY_OVERHEAD_BYTES`` per entry; the least recently used go first."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _size(key: tuple[str, str], value: bytes) -> int:
        return len(key[0]) + len(key[1].encode()) + len(value) + ENTRY_OVERHEAD_BYTES

    def get(self, model: str, text: str) -> list[float] | None:
        with self._lock:
            value = self._entries.get((model, text))
            if value is None:
                return None
            self._entries.move_to_end((model, text))
        vector: list[float] = array("f", value).tolist()  # float32, as stored
        return vector

    def put(self, model: str, text: str, vector: list[float]) -> None:
        key = (model, text)
        value = array("f", vector).tobytes()
        size = self._size(key, value)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= self._size(key, old)
            self._entries[key] = value
            self.bytes += size
            while self.bytes > self.max_bytes:
                evicted_key, evicted = self._entries.popitem(last=False)
                self.bytes -= self._size(evicted_key, evicted)


_caches: list[QueryEmbeddingCache] = []


def query_cache() -> QueryEmbeddingCache:
    """This process's cache (sized from the settings on first use)."""
    if not _caches:
        _caches.append(QueryEmbeddingCache(get_settings().faq_embeddings_query_cache_mb << 20))
    return _caches[0]


async def embed_query(
    text: str, embedder: Embedder | None = None, cache: QueryEmbeddingCache | None = None
) -> list[float]:
    """The unit vector of a reader's query (whitespace-normalised), from the cache when the
    same model embedded the same text before."""
    embedder = embedder or current_embedder()
    cache = cache if cache is not None else query_cache()
    text = normalised_query(text)
    vector = cache.get(embedder.name, text)
    if vector is None:
        vector = (await embedder.embed([text]))[0]
        cache.put(embedder.name, text, vector)
    return vector
