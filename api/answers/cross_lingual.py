"""The cross-lingual leg of ``/answers`` (issue 38): a reader whose language is not a
question's, where that question has no published translation in the reader's locale, finds it
by meaning. The reader's query is embedded with the multilingual embedder
(``api.answers.multilingual``, in a thread, cached like every query vector) and compared with
the multilingual vector of each such question's own text (written by the worker for every
org: ``api.answers.vector_store``).

Which questions it scores is decided in SQL, per question: its vector is of its own locale, of
another language than the reader's, and it has no published translation in the reader's
locale (a translated question is found in the reader's language by the other legs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import lru_cache

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers.multilingual import (
    MULTILINGUAL_DIMENSIONS,
    MULTILINGUAL_MODEL,
    current_multilingual,
    language_of,
)
from api.answers.query_embeddings import embed_query
from api.answers.semantic import semantic_status
from api.answers.vectors import vector_literal
from api.audiences.visibility import Audiences, question_rule_sql
from tenancy.db import read_records

# The nearest questions, beside the lexical candidates. Fewer than the semantic leg's 50:
# across languages the words add next to nothing, so the first five come from the nearest few
# (measured: 20 gave the P@1 and MRR@5 of 50), and HNSW's work grows with the candidates.
NEAREST = 20
# HNSW's candidates before the filters (``api.answers.vectors``: 4 per question asked).
_EF_SEARCH = (("hnsw.ef_search", str(4 * NEAREST)),)
_D = MULTILINGUAL_DIMENSIONS
_DISTANCE = f"(e.embedding::public.vector({_D})) OPERATOR(public.<=>) $1::text::public.vector({_D})"
# $1 the query's vector, $2 the model, $3 the reader's language, $4 the reader's locale.
_UNTRANSLATED = (
    f"e.dimensions = {_D} AND e.model = $2 AND e.locale = q.locale"
    " AND split_part(lower(e.locale), '-', 1) <> $3"
    " AND q.deleted_at IS NULL AND q.status = 'published'"
    " AND NOT EXISTS (SELECT 1 FROM question_translations t WHERE t.question_id = q.id"
    " AND t.locale = $4 AND t.status = 'published')"
)
_SIMILARITY = f"SELECT e.question_id, 1 - ({_DISTANCE}) AS similarity"
_FROM = " FROM question_embeddings e JOIN questions q ON q.id = e.question_id"
# One read: the nearest ($5 of them, in the categories $6 when given) and the cosine of each
# of the other legs' candidates ($7).
# Only the questions the reader may read (issue 39): the audience rule on each part.


@lru_cache(maxsize=256)
def scores_sql(audiences: Audiences) -> str:
    rule = question_rule_sql(audiences, "q")
    readable = f"{_UNTRANSLATED} AND {rule}" if rule is not None else _UNTRANSLATED
    return (
        f"({_SIMILARITY}{_FROM} WHERE {readable}"
        " AND ($6::text[] IS NULL OR q.category_id = ANY($6::text[]))"
        f" ORDER BY {_DISTANCE} LIMIT $5)"
        f" UNION ({_SIMILARITY}{_FROM} WHERE {readable} AND e.question_id = ANY($7::text[]))"
    )


class CrossLingualLeg:
    """One query's cross-lingual leg for a reader in ``locale``, on the org's ``session``
    (``audiences``: the reader's, ``api.audiences.visibility``; None: no audience rule)."""

    def __init__(self, session: AsyncSession, locale: str, audiences: Audiences = ()) -> None:
        self._session = session
        self._locale = locale
        self._audiences = audiences
        self._embedding: asyncio.Future[list[float]] | None = None

    def start(self, text: str) -> None:
        """Embed ``text`` (the reader's query as typed) in a thread from now on, while the
        other legs read: ``nearest`` waits for it."""
        if self._embedding is None:
            self._embedding = asyncio.ensure_future(embed_query(text, current_multilingual()))

    def _args(self, vector: list[float]) -> list[object]:
        return [vector_literal(vector), MULTILINGUAL_MODEL, language_of(self._locale), self._locale]

    async def scores(
        self, text: str, category_ids: Sequence[str] | None, candidates: Sequence[str]
    ) -> dict[str, float] | None:
        """{question id: cosine} of the untranslated questions of other languages nearest
        ``text`` (the reader's query as typed) and of those among ``candidates`` (the other
        legs' finds); None without pgvector."""
        engine = self._session.bind
        if not isinstance(engine, AsyncEngine) or not (await semantic_status(engine)).available:
            return None
        if category_ids is not None and not category_ids:
            return {}
        self.start(text)
        assert self._embedding is not None
        vector = await self._embedding
        if not any(vector):
            return {}
        rows = await read_records(
            self._session,
            scores_sql(self._audiences),
            *self._args(vector),
            NEAREST,
            list(category_ids) if category_ids is not None else None,
            list(candidates),
            settings=_EF_SEARCH,
        )
        return {r["question_id"]: float(r["similarity"]) for r in rows}
