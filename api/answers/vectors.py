"""Nearest questions by embedding (pgvector, HNSW, cosine) in the bound org's schema.

``question_embeddings`` (tenant revision 0011) holds vectors of any size in an untyped
``public.vector`` column; each common size has a partial HNSW index on the vector cast to
that size, which a query uses when it casts and filters the same way (``_nearest_sql``). Both
functions return ``[]`` when semantic search does not run here (``api/answers/semantic.py``):
the caller ranks lexically.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import cast

from sqlalchemy import TextClause, bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers.embedder import configured_model_name
from api.answers.semantic import semantic_status

# HNSW returns hnsw.ef_search candidates (pgvector's default: 40) before the filters on
# locale, status and category: asking for more rows widens the search to match.
DEFAULT_EF_SEARCH = 40
MAX_EF_SEARCH = 1_000
_SET_EF_SEARCH = text("SELECT set_config('hnsw.ef_search', :value, true)")


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, ``[0.1,0.2]`` (sent as text and cast by the server)."""
    return "[" + ",".join(repr(float(v)) for v in vector) + "]"


@lru_cache(maxsize=64)
def _nearest_sql(dimensions: int, published_only: bool, with_categories: bool) -> TextClause:
    """The statement for vectors of ``dimensions`` (an int: rendered in the SQL so that the
    planner matches the partial index ``ix_question_embeddings_hnsw_<dimensions>``)."""
    d = int(dimensions)
    # Qualified operator: the role's search_path does not include ``public``.
    distance = (
        f"(e.embedding::public.vector({d})) OPERATOR(public.<=>)"
        f" CAST(CAST(:vector AS text) AS public.vector({d}))"
    )
    filters = [
        f"e.dimensions = {d}",
        "e.model = :model",
        "e.locale = :locale",
        "q.deleted_at IS NULL",
    ]
    if published_only:
        filters += [
            "q.status = 'published'",
            "(e.locale = q.locale OR EXISTS (SELECT 1 FROM question_translations t"
            " WHERE t.question_id = e.question_id AND t.locale = e.locale"
            " AND t.status = 'published'))",
        ]
    statement = text(
        f"SELECT e.question_id, 1 - ({distance}) AS similarity"
        " FROM question_embeddings e JOIN questions q ON q.id = e.question_id"
        f" WHERE {' AND '.join(filters)}"
        + (" AND q.category_id IN :category_ids" if with_categories else "")
        + f" ORDER BY {distance} LIMIT :limit"
    )
    if with_categories:
        statement = statement.bindparams(bindparam("category_ids", expanding=True))
    return statement


def _engine(session: AsyncSession) -> AsyncEngine:
    return cast(AsyncEngine, session.bind)


async def nearest(
    session: AsyncSession,
    vector: Sequence[float],
    *,
    locale: str,
    limit: int,
    published_only: bool,
    category_ids: Sequence[str] | None,
    model: str | None = None,
) -> list[tuple[str, float]]:
    """Up to ``limit`` question ids of ``locale`` closest to ``vector`` (unit length), with
    their cosine similarity, best first. Live questions only; ``published_only``: published
    ones (and in another locale than the question's, a published translation);
    ``category_ids``: in those categories. ``model``: whose vectors (default: the configured
    embedder's). A zero vector (a query of no known word) finds nothing."""
    if limit < 1 or not any(vector) or (category_ids is not None and not category_ids):
        return []
    if not (await semantic_status(_engine(session))).available:
        return []
    if limit * 4 > DEFAULT_EF_SEARCH:
        await session.execute(_SET_EF_SEARCH, {"value": str(min(MAX_EF_SEARCH, limit * 4))})
    params: dict[str, object] = {
        "vector": vector_literal(vector),
        "model": model or configured_model_name(),
        "locale": locale,
        "limit": limit,
    }
    if category_ids is not None:
        params["category_ids"] = list(category_ids)
    rows = await session.execute(
        _nearest_sql(len(vector), published_only, category_ids is not None), params
    )
    return [(question_id, float(similarity)) for question_id, similarity in rows.all()]


_SOURCE = text(
    "SELECT embedding::text FROM question_embeddings"
    " WHERE question_id = :question_id AND locale = :locale AND model = :model"
)


async def similar_to(
    session: AsyncSession, question_id: str, locale: str, limit: int, *, model: str | None = None
) -> list[tuple[str, float]]:
    """Up to ``limit`` other live questions (any status: this is for editors) closest to
    ``question_id``'s embedding in ``locale``, best first; ``[]`` while it has none."""
    if limit < 1 or not (await semantic_status(_engine(session))).available:
        return []
    model = model or configured_model_name()
    source = (
        await session.execute(
            _SOURCE, {"question_id": question_id, "locale": locale, "model": model}
        )
    ).scalar()
    if source is None:
        return []
    vector = [float(v) for v in source.strip("[]").split(",")]
    found = await nearest(
        session,
        vector,
        locale=locale,
        limit=limit + 1,
        published_only=False,
        category_ids=None,
        model=model,
    )
    return [(qid, score) for qid, score in found if qid != question_id][:limit]
