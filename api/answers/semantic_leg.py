"""The semantic leg of ``/answers``: the query's embedding (cached: ``query_embeddings``) against
the questions' (``vectors``, pgvector's HNSW index), of every model that embeds the reader's
locale (``api.answers.multilingual.embedders``: WordLlama, English only, and the multilingual
USE, every language). A candidate's cosine is the mean of the models' cosines it has: neither
model alone finds as much as both (docs/decisions.md, issue 38), and in a language WordLlama
does not embed the multilingual model is the leg alone. Where WordLlama embeds, only it reads
the index for the nearest questions; the multilingual model rescores the candidates (the
lexical leg's and WordLlama's nearest): its own nearest search was the costliest step of the
request, and without it P@1 and MRR@5 were the same on every English evaluation set, a FAQ
of 325 entries pooled from five of them included (docs/decisions.md, session 19). A question
missing one model's vector (not written yet) is scored by the other's."""

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
SELECT e.question_id, e.model,
    1 - (e.embedding OPERATOR(public.<=>) ${vector}::public.vector) AS similarity
FROM question_embeddings e JOIN questions q ON q.id = e.question_id
WHERE e.question_id = ANY(${ids}::text[]) AND e.locale = $1 AND e.model = ${model}
    AND e.dimensions = ${dimensions} AND q.deleted_at IS NULL AND q.status = 'published'{rule}
"""


@lru_cache(maxsize=256)
def cosines_sql(audiences: Audiences, models: int = 1) -> str:
    """The cosines of published questions its readers may read (issue 39), for ``models``
    models in one statement: $1 the locale, then per model its vector, the ids, its name and
    its vectors' size."""
    rule = question_rule_sql(audiences, "q")
    parts = []
    for n in range(models):
        first = 2 + 4 * n
        parts.append(
            _COSINES_SQL.replace("{rule}", f" AND {rule}" if rule is not None else "")
            .replace("{vector}", str(first))
            .replace("{ids}", str(first + 1))
            .replace("{model}", str(first + 2))
            .replace("{dimensions}", str(first + 3))
        )
    return parts[0] if models == 1 else " UNION ALL ".join(f"({part})" for part in parts)


class ModelLeg:
    """One model's part of the leg: the query's vector and the cosines found so far (of the
    nearest questions, then of the other candidates)."""

    def __init__(self, embedder: Embedder, searches: bool = True) -> None:
        self._embedder = embedder
        self._vector: asyncio.Future[list[float]] | None = None
        self._text: str | None = None
        self.name = embedder.name
        # The multilingual model reads a sentence whole (stopwords, accents and all);
        # WordLlama reads the analysed words.
        self.reads_sentences = embedder.name == MULTILINGUAL_MODEL
        # Whether it reads the index for the nearest questions (else it only rescores).
        self.searches = searches
        self.found: dict[str, float] = {}

    def start(self, text: str) -> None:
        """Embed ``text`` in a thread from now on (the models embed at the same time); a
        text other than the one started replaces it."""
        if text != self._text:
            self._text = text
            self._vector = asyncio.ensure_future(embed_query(text, self._embedder))

    async def vector(self) -> list[float]:
        assert self._vector is not None
        return await self._vector


class EmbeddingsLeg:
    """One query's semantic leg in ``locale``, on the org's ``session``, for readers of
    ``audiences`` (``api.audiences.visibility``; None: no audience rule); ``models``: the
    embedders to blend (default ``api.answers.multilingual.embedders()``), of which those that
    serve ``locale`` are asked. Every model is read in the same statement: one for the
    nearest questions, one for the other candidates' cosines."""

    def __init__(
        self,
        session: AsyncSession,
        locale: str,
        audiences: Audiences = (),
        models: Sequence[Embedder] | None = None,
    ) -> None:
        self._session = session
        self._locale = locale
        self._audiences = audiences
        serving = [m for m in (models if models is not None else embedders()) if serves(m, locale)]
        # Only the multilingual model in this language: the leg is its own (it searches, with
        # its cosines' own floor and thresholds); beside WordLlama it only rescores.
        alone = [m.name for m in serving] == [MULTILINGUAL_MODEL]
        self.models = [ModelLeg(m, alone or m.name != MULTILINGUAL_MODEL) for m in serving]
        self.leg = MULTILINGUAL if alone else SEMANTIC

    def start(self, typed: str) -> None:
        """Embed the query as typed with the multilingual model from now on, while the query
        is analysed: it reads a sentence whole (stopwords, accents and all), where WordLlama
        reads the analysed words (``nearest``'s ``text``: typos corrected, synonyms added)."""
        engine = self._session.bind
        status = known_status(engine) if isinstance(engine, AsyncEngine) else None
        if status is not None and not status.available:
            return  # no vectors here: nothing to embed for
        for model in self.models:
            if model.reads_sentences:
                model.start(typed)

    async def nearest(
        self, text: str, category_ids: Sequence[str] | None, sentence: str
    ) -> dict[str, float] | None:
        """``text``: the analysed query (WordLlama's); ``sentence``: the query as typed with
        its typos corrected (the multilingual model's: the same as ``start``'s unless a typo
        was corrected)."""
        engine = self._session.bind
        if not self.models or not isinstance(engine, AsyncEngine):
            return None
        if not (await semantic_status(engine)).available:
            return None
        for model in self.models:
            model.start(sentence if model.reads_sentences else text)
        searching = [model for model in self.models if model.searches]
        found = await vectors.nearest_of_models(
            self._session,
            [(model.name, await model.vector()) for model in searching],
            locale=self._locale,
            limit=NEAREST,
            published_only=True,
            category_ids=category_ids,
            audiences=self._audiences,
        )
        for model in searching:
            model.found.update(found.get(model.name, ()))
        return self.blended()

    async def cosines(self, ids: Sequence[str]) -> dict[str, float]:
        """The blended cosine of every candidate: ``ids`` and what ``nearest`` found."""
        every = list(dict.fromkeys([*ids, *self.blended()]))
        args: list[object] = [self._locale]
        for model in self.models:
            vector = await model.vector()
            missing = [i for i in every if i not in model.found]
            if missing and any(vector):
                args += [vectors.vector_literal(vector), missing, model.name, len(vector)]
        asked = (len(args) - 1) // 4
        if asked:
            rows = await read_records(self._session, cosines_sql(self._audiences, asked), *args)
            by_name = {model.name: model for model in self.models}
            for row in rows:
                by_name[row["model"]].found[row["question_id"]] = float(row["similarity"])
        return self.blended()

    def blended(self) -> dict[str, float]:
        return blend([model.found for model in self.models])


def blend(cosines: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each candidate's mean cosine over the models (``cosines``: one map each) that scored it."""
    found: dict[str, list[float]] = {}
    for model in cosines:
        for question_id, cosine in model.items():
            found.setdefault(question_id, []).append(cosine)
    return {question_id: sum(c) / len(c) for question_id, c in found.items()}
