"""The semantic leg of ``/answers``: the query's embedding (this process's embedder, cached:
``query_embeddings``) against the questions' (``vectors``, pgvector's HNSW index)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers import vectors
from api.answers.embedder import current_embedder, serves
from api.answers.query_embeddings import embed_query
from api.answers.semantic import semantic_status
from api.audiences.visibility import Audiences, question_rule_sql
from tenancy.db import read_records

NEAREST = 50  # the nearest questions read from the index, beside the lexical candidates

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


class EmbeddingsLeg:
    """One query's semantic leg in ``locale``, on the org's ``session``, for readers of
    ``audiences`` (``api.audiences.visibility``; None: no audience rule)."""

    def __init__(self, session: AsyncSession, locale: str, audiences: Audiences = ()) -> None:
        self._session = session
        self._locale = locale
        self._audiences = audiences
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
            audiences=self._audiences,
        )
        return dict(found)

    async def cosines(self, ids: Sequence[str]) -> dict[str, float]:
        vector = self._vector
        if not ids or vector is None or not any(vector):
            return {}
        rows = await read_records(
            self._session,
            cosines_sql(self._audiences),
            vectors.vector_literal(vector),
            list(ids),
            self._locale,
            current_embedder().name,
            len(vector),
        )
        return {r["question_id"]: float(r["similarity"]) for r in rows}
