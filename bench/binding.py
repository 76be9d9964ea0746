"""How to bind a session to an org's schema, decided by numbers: the list query of the service
(ORM ``select(Question)`` page + commit, as ``GET /questions`` runs it) in-process, against
few and many schemas, with

- ``translate_map``: ``schema_translate_map={"tenant": "t_..."}``: the schema is in the SQL
  text, so asyncpg's per-connection prepared statements (keyed on the text) differ per org;
- ``search_path``: schema-free SQL text and ``set_config('search_path', $1, true)`` (SET LOCAL)
  at the start of each transaction: one prepared statement for every org. This is what
  ``tenancy.db.tenant_session`` does (the service's binding); the other variant is kept here
  to measure against.

Reported per variant: queries/s, the prepared-statement cache hit rate (SQLAlchemy's asyncpg
adapter cache, counted around its ``_prepare``), and the memory of the backends that served
them (``pg_backend_memory_contexts``, total and ``CacheMemoryContext``), with how many
distinct schemas each backend touched.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_connection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from api.questions.models import Question
from tenancy.db import (
    TENANT_SCHEMA_PLACEHOLDER,
    UNBOUND_SCHEMA,
    asyncpg_url,
    checked_schema_name,
    tenant_session,
)

APP_NAME = "bench-binding"


class _Counters:
    calls = 0
    misses = 0


def _count_prepares() -> Callable[[], None]:
    original = AsyncAdapt_asyncpg_connection._prepare

    async def counted(self: Any, operation: str, invalidate_timestamp: float) -> Any:
        _Counters.calls += 1
        cache = self._prepared_statement_cache
        if cache is None or operation not in cache:
            _Counters.misses += 1
        return await original(self, operation, invalidate_timestamp)  # type: ignore[no-untyped-call]

    AsyncAdapt_asyncpg_connection._prepare = counted  # type: ignore[method-assign]

    def restore() -> None:
        AsyncAdapt_asyncpg_connection._prepare = original  # type: ignore[method-assign]

    return restore


def translate_map_session(engine: AsyncEngine, schema: str) -> AsyncSession:
    """The binding the service had before: the org's schema inside the SQL text."""
    translate = {TENANT_SCHEMA_PLACEHOLDER: checked_schema_name(schema)}
    return AsyncSession(
        bind=engine.execution_options(schema_translate_map=translate), expire_on_commit=False
    )


VARIANTS: dict[str, Callable[[AsyncEngine, str], AsyncSession]] = {
    "translate_map": translate_map_session,
    "search_path": tenant_session,
}


async def _one_variant(
    url: str, variant: str, schemas: list[str], seconds: float, concurrency: int
) -> dict[str, Any]:
    engine = create_async_engine(
        asyncpg_url(url),
        pool_size=concurrency,
        max_overflow=0,
        connect_args={
            "server_settings": {"search_path": UNBOUND_SCHEMA, "application_name": APP_NAME}
        },
    )
    factory = VARIANTS[variant]
    touched: dict[int, set[str]] = {}
    _Counters.calls = _Counters.misses = 0
    done = 0
    deadline = time.perf_counter() + seconds
    rng = random.Random(7)

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            schema = schemas[rng.randrange(len(schemas))]
            async with factory(engine, schema) as session:
                rows = (
                    await session.execute(
                        select(Question)
                        .where(Question.deleted_at.is_(None))
                        .order_by(Question.sort_order, Question.id)
                        .limit(21)
                    )
                ).all()
                conn = await session.connection()
                raw = await conn.get_raw_connection()
                touched.setdefault(id(raw.driver_connection), set()).add(schema)
                await session.commit()
            assert rows
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    calls, misses = _Counters.calls, _Counters.misses
    # The memory of each backend that served the run: hold every pooled connection at once.
    memory: list[tuple[int, int]] = []
    conns = [await engine.connect() for _ in range(concurrency)]
    for conn in conns:
        row = (
            await conn.execute(
                text(
                    "SELECT sum(total_bytes), sum(total_bytes) FILTER "
                    "(WHERE name = 'CacheMemoryContext') FROM pg_backend_memory_contexts"
                )
            )
        ).one()
        memory.append((int(row[0]), int(row[1] or 0)))
    for conn in conns:
        await conn.close()
    await engine.dispose()
    per_backend = [len(s) for s in touched.values()] or [0]
    return {
        "variant": variant,
        "schemas": len(schemas),
        "qps": round(done / elapsed, 1),
        "prepare_calls": calls,
        "prepare_hit_rate": round(1 - misses / calls, 4) if calls else None,
        "backend_mb_avg": round(sum(m[0] for m in memory) / len(memory) / 2**20, 1),
        "cache_context_mb_avg": round(sum(m[1] for m in memory) / len(memory) / 2**20, 1),
        "schemas_touched_per_backend": round(sum(per_backend) / len(per_backend)),
    }


async def study(
    url: str, few: list[str], many: list[str], *, seconds: float, concurrency: int = 8
) -> list[dict[str, Any]]:
    """Both variants, each against few then many schemas, back to back, fresh connections."""
    restore = _count_prepares()
    try:
        out = []
        for variant in VARIANTS:
            for schemas in (few, many):
                out.append(await _one_variant(url, variant, schemas, seconds, concurrency))
        return out
    finally:
        restore()
