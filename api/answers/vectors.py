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

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers.embedder import configured_model_name
from api.answers.semantic import semantic_status
from api.audiences.visibility import Audiences, question_rule_sql
from tenancy.db import read_records

# HNSW returns hnsw.ef_search candidates (pgvector's default: 40) before the filters on
# locale, status and category: asking for more rows widens the search to match.
DEFAULT_EF_SEARCH = 40
MAX_EF_SEARCH = 1_000


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, ``[0.1,0.2]`` (sent as text and cast by the server)."""
    return "[" + ",".join(map(repr, map(float, vector))) + "]"


@lru_cache(maxsize=64)
def _nearest_sql(
    dimensions: int,
    published_only: bool,
    with_categories: bool,
    audiences: Audiences = None,
    vector_param: int = 1,
    model_param: int = 2,
) -> str:
    """The statement for vectors of ``dimensions`` (an int: rendered in the SQL so that the
    planner matches the partial index ``ix_question_embeddings_hnsw_<dimensions>``), in
    PostgreSQL's own parameters: ``$<vector_param>`` the vector's text, ``$<model_param>`` the
    model, $3 locale, $4 limit, $5 the category ids. ``audiences``: only questions its readers
    may read (issue 39)."""
    d = int(dimensions)
    vector, model = f"${int(vector_param)}", f"${int(model_param)}"
    # Qualified operator: the role's search_path does not include ``public``.
    distance = (
        f"(e.embedding::public.vector({d})) OPERATOR(public.<=>) {vector}::text::public.vector({d})"
    )
    filters = [f"e.dimensions = {d}", f"e.model = {model}", "e.locale = $3", "q.deleted_at IS NULL"]
    if published_only:
        filters += [
            "q.status = 'published'",
            "(e.locale = q.locale OR EXISTS (SELECT 1 FROM question_translations t"
            " WHERE t.question_id = e.question_id AND t.locale = e.locale"
            " AND t.status = 'published'))",
        ]
    rule = question_rule_sql(audiences, "q")
    if rule is not None:
        filters.append(rule)
    if with_categories:
        filters.append("q.category_id = ANY($5::text[])")
    return (
        f"SELECT e.question_id, e.model, 1 - ({distance}) AS similarity"
        " FROM question_embeddings e JOIN questions q ON q.id = e.question_id"
        f" WHERE {' AND '.join(filters)} ORDER BY {distance} LIMIT $4"
    )


def nearest_statement(
    asked: Sequence[tuple[str, Sequence[float]]],
    locale: str,
    limit: int,
    published_only: bool,
    category_ids: Sequence[str] | None,
    audiences: Audiences = None,
) -> tuple[str, list[object]]:
    """The SQL and arguments of ``nearest_of_models``: one ``_nearest_sql`` per model, joined
    by UNION ALL, the locale, limit and categories shared."""
    (model, vector), others = asked[0], asked[1:]
    args: list[object] = [vector_literal(vector), model, locale, limit]
    if category_ids is not None:
        args.append(list(category_ids))
    with_categories = category_ids is not None
    parts = [_nearest_sql(len(vector), published_only, with_categories, audiences)]
    for model, vector in others:
        args += [vector_literal(vector), model]
        parts.append(
            _nearest_sql(
                len(vector), published_only, with_categories, audiences, len(args) - 1, len(args)
            )
        )
    return (parts[0] if not others else " UNION ALL ".join(f"({p})" for p in parts)), args


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
    audiences: Audiences = None,
) -> list[tuple[str, float]]:
    """Up to ``limit`` question ids of ``locale`` closest to ``vector`` (unit length), with
    their cosine similarity, best first. Live questions only; ``published_only``: published
    ones (and in another locale than the question's, a published translation);
    ``category_ids``: in those categories; ``audiences``: those its readers may read (None:
    no audience rule). ``model``: whose vectors (default: the configured
    embedder's). A zero vector (a query of no known word) finds nothing."""
    name = model or configured_model_name()
    found = await nearest_of_models(
        session,
        [(name, vector)],
        locale=locale,
        limit=limit,
        published_only=published_only,
        category_ids=category_ids,
        audiences=audiences,
    )
    return found.get(name, [])


async def nearest_of_models(
    session: AsyncSession,
    queries: Sequence[tuple[str, Sequence[float]]],
    *,
    locale: str,
    limit: int,
    published_only: bool,
    category_ids: Sequence[str] | None,
    audiences: Audiences = None,
) -> dict[str, list[tuple[str, float]]]:
    """``nearest`` for several models at once, one statement (one round trip, each model's
    own index): ``queries`` pairs a model with its query vector; ``{model: [(id, cosine)]}``,
    best first, without the models whose vector is zero."""
    asked = [(model, vector) for model, vector in queries if any(vector)]
    if limit < 1 or not asked or (category_ids is not None and not category_ids):
        return {}
    if not (await semantic_status(_engine(session))).available:
        return {}
    # Asked of the read's own connection (a read pool's keeps it): no transaction for it.
    ef_search = min(MAX_EF_SEARCH, limit * 4)
    settings = (("hnsw.ef_search", str(ef_search)),) if ef_search > DEFAULT_EF_SEARCH else ()
    sql, args = nearest_statement(asked, locale, limit, published_only, category_ids, audiences)
    found: dict[str, list[tuple[str, float]]] = {}
    for row in await read_records(session, sql, *args, settings=settings):
        found.setdefault(row["model"], []).append((row["question_id"], float(row["similarity"])))
    for rows in found.values():
        rows.sort(key=lambda row: -row[1])
    return found


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
