"""Each org's vocabulary: how many published questions hold each lexeme (BM25's document
frequencies), the number of questions and their mean length, and the words typos are
corrected to (``terms.Corrector``).

Counting every lexeme of every question is a scan of the org's search vectors (about a second
at 100,000 questions), so it is never on a reader's path twice: a process keeps each org's
vocabulary in an LRU bounded by bytes (``VocabularyCache``) and refreshes it in the
background at most every ``REFRESH_SECONDS``, and only when the org wrote something since
(its content generation, ``tenancy/generations.py``, changed), the reader meanwhile served
from the previous one (a few seconds of staleness changes weights and typo corrections only,
never which questions exist: those are always read from the database). A vocabulary keeps
the ``MAX_LEXEMES`` most frequent lexemes; a rarer one counts as found once.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from api.answers.terms import Corrector, english_words
from api.audiences.visibility import question_rule_sql
from tenancy.db import read_records
from tenancy.generations import initial_generation

MAX_LEXEMES = 100_000
REFRESH_SECONDS = 30.0
CACHE_BYTES = 64 * 1024 * 1024

# The lexemes of published, live questions, each counted once per question: its own text's
# vector, or the published translation's in the locale (``$1``) when there is one. Public
# content only (issue 39): words of restricted questions never shape anyone's search (typo
# corrections, document frequencies).
_PUBLIC = question_rule_sql((), "q")
_VOCABULARY_SQL = f"""
WITH served AS (
    SELECT coalesce(t.search_vector, q.search_vector) AS v
    FROM questions q
    LEFT JOIN question_translations t
        ON t.question_id = q.id AND t.locale = $1 AND t.status = 'published'
    WHERE q.deleted_at IS NULL AND q.status = 'published' AND {_PUBLIC}
)
SELECT u.lexeme, count(*) AS df
FROM served, unnest(served.v) AS u
GROUP BY u.lexeme
ORDER BY df DESC
LIMIT $2
"""
_SIZE_SQL = f"""
SELECT count(*) AS n, coalesce(avg(length(coalesce(t.search_vector, q.search_vector))), 0) AS dl
FROM questions q
LEFT JOIN question_translations t
    ON t.question_id = q.id AND t.locale = $1 AND t.status = 'published'
WHERE q.deleted_at IS NULL AND q.status = 'published' AND {_PUBLIC}
"""


@dataclass
class Vocabulary:
    frequencies: dict[str, int]
    documents: int
    mean_length: float
    locale: str = "en"
    loaded_at: float = field(default_factory=time.monotonic)
    generation: bytes | None = None  # the org's content generation it was read at
    _corrector: Corrector | None = None

    @property
    def corrector(self) -> Corrector:
        if self._corrector is None:
            english = self.locale.split("-")[0].lower() == "en"
            self._corrector = Corrector(self.frequencies, english_words() if english else None)
        return self._corrector

    def size(self) -> int:
        """Bytes held, about (the dict, its keys, and the corrector's index of them; the
        English dictionary is shared by all)."""
        words = sum(sys.getsizeof(w) for w in self.frequencies)
        return sys.getsizeof(self.frequencies) + 2 * words + 64 * len(self.frequencies)


async def load(session: AsyncSession, locale: str) -> Vocabulary:
    rows = await read_records(session, _VOCABULARY_SQL, locale, MAX_LEXEMES)
    size = await read_records(session, _SIZE_SQL, locale)
    return Vocabulary(
        frequencies={r["lexeme"]: int(r["df"]) for r in rows},
        documents=int(size[0]["n"]),
        mean_length=float(size[0]["dl"]),
        locale=locale,
    )


Loader = Callable[[], Awaitable[Vocabulary]]


class VocabularyCache:
    """Vocabularies by (org schema, locale), LRU bounded by ``budget`` bytes; one load at a
    time per key; a stale entry is served while its refresh runs in the background."""

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self._budget = budget
        self._entries: OrderedDict[tuple[str, str], tuple[Vocabulary, int]] = OrderedDict()
        self._bytes = 0
        self._loading: dict[tuple[str, str], asyncio.Task[Vocabulary]] = {}

    async def get(self, schema: str, locale: str, loader: Loader) -> Vocabulary:
        key = (schema, locale)
        held = self._entries.get(key)
        if held is not None:
            self._entries.move_to_end(key)
            vocabulary = held[0]
            if time.monotonic() - vocabulary.loaded_at > REFRESH_SECONDS:
                self._start(key, loader)  # the next reader gets the fresh one
            return vocabulary
        return await asyncio.shield(self._start(key, loader))

    def _start(self, key: tuple[str, str], loader: Loader) -> asyncio.Task[Vocabulary]:
        task = self._loading.get(key)
        if task is None:
            task = asyncio.ensure_future(self._load(key, loader))
            # A background refresh that fails leaves the previous vocabulary in use.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            self._loading[key] = task
        return task

    @property
    def loading(self) -> bool:
        """Whether a load or a refresh is running."""
        return bool(self._loading)

    async def _load(self, key: tuple[str, str], loader: Loader) -> Vocabulary:
        """Read ``key``'s vocabulary, unless the one held is of the org's current generation
        (nothing written since it was read: its age is reset instead). The generation is read
        first, so a write during the read makes the next refresh read again."""
        try:
            generation = await initial_generation(key[0].strip('"'))  # the path's schema
            held = self._entries.get(key)
            if held is not None and generation is not None and held[0].generation == generation:
                held[0].loaded_at = time.monotonic()
                return held[0]
            vocabulary = await loader()
            vocabulary.generation = generation
            self._store(key, vocabulary)
            return vocabulary
        finally:
            self._loading.pop(key, None)

    def _store(self, key: tuple[str, str], vocabulary: Vocabulary) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        size = vocabulary.size()
        if size > self._budget:
            return
        self._entries[key] = (vocabulary, size)
        self._bytes += size
        while self._bytes > self._budget:
            _key, (_vocabulary, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped

    @property
    def bytes_held(self) -> int:
        return self._bytes
