"""The semantic leg of ``/answers``: the query's embedding (cached: ``query_embeddings``) against
the questions' (``vectors``, pgvector's HNSW index), of every model that embeds the reader's
locale (``api.answers.multilingual.embedders``: WordLlama, English only, and the multilingual
USE, every language). A candidate's cosine is the mean of the models' cosines it has: neither
model alone finds as much as both (docs/decisions.md, issue 38), and in a language WordLlama
does not embed the multilingual model is the leg alone. A question missing one model's vector
(not written yet) is scored by the other's."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import lru_cache

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers import vectors
from api.answers.embedder import Embedder, serves
from api.answers.multilingual import MULTILINGUAL_MODEL, embedders
from api.answers.query_embeddings import embed_query
from api.answers.ranking import MULTILINGUAL, SEMANTIC
from api.answers.semantic import known_status, semantic_status
from api.audiences.visibility import Audiences, question_rule_sql
from tenancy.db import read_records

NEAREST = 50  # the nearest questions read from the index per model, beside the lexical ones

_COSINES_SQL = """
SELECT e.question_id, 1 - (e.embedding OPERATOR(public.<=>) $1::public.vector) AS similarity
FROM question_embeddings e JOIN questions q ON q.id = e.question_id
WHERE e.question_id = ANY($2::text[]) AND e.locale = $3 AND e.model = $4 AND e.dimensions = $5
    AND q.deleted_at IS NULL AND q.status = 'published'{rule}
"""


@lru_cache(maxsize=256)
def cosines_sql(audiences: Audiences) -> str:
    """The cosines of published questions its readers may read (issue 39)."""
    rule = question_rule_sql(audiences, "q")
    return _COSINES_SQL.replace("{rule}", f" AND {rule}" if rule is not None else "")


class ModelLeg:
    """One model's part of the leg: the query's vector, the nearest questions, and the
    cosines of the other candidates."""

    def __init__(
        self, session: AsyncSession, locale: str, audiences: Audiences, embedder: Embedder
    ) -> None:
        self._session = session
        self._locale = locale
        self._audiences = audiences
        self._embedder = embedder
        self._vector: asyncio.Future[list[float]] | None = None
        self._text: str | None = None
        self.name = embedder.name
        # The multilingual model reads a sentence whole (stopwords, accents and all);
        # WordLlama reads the analysed words.
        self.reads_sentences = embedder.name == MULTILINGUAL_MODEL
        self.found: dict[str, float] = {}

    def start(self, text: str) -> None:
        """Embed ``text`` in a thread from now on (the models embed at the same time); a
        text other than the one started replaces it."""
        if text != self._text:
            self._text = text
            self._vector = asyncio.ensure_future(embed_query(text, self._embedder))

    async def nearest(self, category_ids: Sequence[str] | None) -> None:
        assert self._vector is not None
        vector = await self._vector
        found = await vectors.nearest(
            self._session,
            vector,
            locale=self._locale,
            limit=NEAREST,
            published_only=True,
            category_ids=category_ids,
            model=self._embedder.name,
            audiences=self._audiences,
        )
        self.found.update(found)

    async def add_cosines(self, ids: Sequence[str]) -> None:
        """The cosines of those of ``ids`` it has not found yet."""
        assert self._vector is not None
        vector = await self._vector
        missing = [i for i in ids if i not in self.found]
        if not missing or not any(vector):
            return
        rows = await read_records(
            self._session,
            cosines_sql(self._audiences),
            vectors.vector_literal(vector),
            missing,
            self._locale,
            self._embedder.name,
            len(vector),
        )
        self.found.update((r["question_id"], float(r["similarity"])) for r in rows)


class EmbeddingsLeg:
    """One query's semantic leg in ``locale``, on the org's ``session``, for readers of
    ``audiences`` (``api.audiences.visibility``; None: no audience rule); ``models``: the
    embedders to blend (default ``api.answers.multilingual.embedders()``), of which those that
    serve ``locale`` are asked."""

    def __init__(
        self,
        session: AsyncSession,
        locale: str,
        audiences: Audiences = (),
        models: Sequence[Embedder] | None = None,
    ) -> None:
        self._session = session
        self._models = [
            ModelLeg(session, locale, audiences, model)
            for model in (models if models is not None else embedders())
            if serves(model, locale)
        ]
        # Only the multilingual model in this language: its cosines' own floor and thresholds.
        alone = len(self._models) == 1 and self._models[0].reads_sentences
        self.leg = MULTILINGUAL if alone else SEMANTIC

    def start(self, typed: str) -> None:
        """Embed the query as typed with the multilingual model from now on, while the query
        is analysed: it reads a sentence whole (stopwords, accents and all), where WordLlama
        reads the analysed words (``nearest``'s ``text``: typos corrected, synonyms added)."""
        engine = self._session.bind
        status = known_status(engine) if isinstance(engine, AsyncEngine) else None
        if status is not None and not status.available:
            return  # no vectors here: nothing to embed for
        for model in self._models:
            if model.reads_sentences:
                model.start(typed)

    async def nearest(
        self, text: str, category_ids: Sequence[str] | None, sentence: str
    ) -> dict[str, float] | None:
        """``text``: the analysed query (WordLlama's); ``sentence``: the query as typed with
        its typos corrected (the multilingual model's: the same as ``start``'s unless a typo
        was corrected)."""
        engine = self._session.bind
        if not self._models or not isinstance(engine, AsyncEngine):
            return None
        if not (await semantic_status(engine)).available:
            return None
        for model in self._models:
            model.start(sentence if model.reads_sentences else text)
        for model in self._models:
            await model.nearest(category_ids)
        return self.blended()

    async def cosines(self, ids: Sequence[str]) -> dict[str, float]:
        """The blended cosine of every candidate: ``ids`` and what ``nearest`` found."""
        every = list(dict.fromkeys([*ids, *self.blended()]))
        for model in self._models:
            await model.add_cosines(every)
        return self.blended()

    def blended(self) -> dict[str, float]:
        return blend([model.found for model in self._models])


def blend(cosines: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each candidate's mean cosine over the models (``cosines``: one map each) that scored it."""
    found: dict[str, list[float]] = {}
    for model in cosines:
        for question_id, cosine in model.items():
            found.setdefault(question_id, []).append(cosine)
    return {question_id: sum(c) / len(c) for question_id, c in found.items()}
