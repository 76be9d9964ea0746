"""The semantic leg of ``/answers``: the query's embedding (this process's embedder, cached:
``query_embeddings``) against the questions' (``vectors``, pgvector's HNSW index)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers import vectors
from api.answers.embedder import current_embedder, serves
from api.answers.query_embeddings import embed_query
from api.answers.semantic import semantic_status
from tenancy.db import read_records

NEAREST = 50  # the nearest questions read from the index, beside the lexical candidates

_COSINES_SQL = """
SELECT question_id, 1 - (embedding OPERATOR(public.<=>) $1::public.vector) AS similarity
FROM question_embeddings
WHERE question_id = ANY($2::text[]) AND locale = $3 AND model = $4 AND dimensions = $5
"""


class EmbeddingsLeg:
    """One query's semantic leg in ``locale``, on the org's ``session``."""

    def __init__(self, session: AsyncSession, locale: str) -> None:
        self._session = session
        self._locale = locale
        self._vector: list[float] | None = None

    async def nearest(
        self, text: str, category_ids: Sequence[str] | None
    ) -> dict[str, float] | None:
        embedder = current_embedder()
        engine = self._session.bind
        if not serves(embedder, self._locale) or not isinstance(engine, AsyncEngine):
            return None
        if not (await semantic_status(engine)).available:
            return None
        self._vector = await embed_query(text, embedder)
        found = await vectors.nearest(
            self._session,
            self._vector,
            locale=self._locale,
            limit=NEAREST,
            published_only=True,
            category_ids=category_ids,
        )
        return dict(found)

    async def cosines(self, ids: Sequence[str]) -> dict[str, float]:
        vector = self._vector
        if not ids or vector is None or not any(vector):
            return {}
        rows = await read_records(
            self._session,
            _COSINES_SQL,
            vectors.vector_literal(vector),
            list(ids),
            self._locale,
            current_embedder().name,
            len(vector),
        )
        return {r["question_id"]: float(r["similarity"]) for r in rows}
