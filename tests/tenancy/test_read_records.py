"""``tenancy.db.read_records`` (issue 14): the hot reads' SQL sent to the driver directly, on the
read pool. The same guarantees as ``read_rows``: each read runs on its own org's schema, inside
a transaction it sees the transaction's writes, the engine's statement_timeout cuts it, and a
read whose pooled connection was lost is sent again on a new connection."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.app import is_unavailable
from tenancy.db import make_engine, read_records, read_rows, search_path_of, tenant_session
from tenancy.settings import get_settings
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient


async def test_reads_of_orgs_taking_turns_run_on_their_own_schema(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await create(org, title="One in A")
    for n in range(3):
        await create(other_org, title=f"In B, number {n}")
    expected = {org.info.schema_name: 1, other_org.info.schema_name: 3}
    for _ in range(4):
        for schema, count in expected.items():
            async with tenant_session(engine, schema) as session:
                rows = await read_records(
                    session, "SELECT current_setting('search_path'), count(*) FROM questions"
                )
                assert tuple(rows[0]) == (search_path_of(schema), count)
                assert not session.in_transaction()
                # read_rows shares the pool and its record of each connection's binding
                path = await read_rows(session, text("SELECT current_setting('search_path')"))
                assert path.scalar_one() == search_path_of(schema)
    async with engine.connect() as conn:  # the read pool's bindings never leak to the engine
        assert (await conn.execute(text("SELECT current_setting('search_path')"))).scalar_one() == (
            "unbound"
        )


async def test_a_read_inside_a_transaction_sees_its_writes(
    engine: AsyncEngine, org: OrgClient
) -> None:
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(text("UPDATE questions SET title = 'changed'"))
        await create(org, title="Another")  # committed elsewhere, seen too (READ COMMITTED)
        rows = await read_records(session, "SELECT title FROM questions ORDER BY title")
        assert [r[0] for r in rows] == ["Another"]
        await session.rollback()
    await create(org, title="Mine")
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(text("UPDATE questions SET title = 'changed' WHERE title = 'Mine'"))
        rows = await read_records(session, "SELECT title FROM questions ORDER BY title")
        assert [r[0] for r in rows] == ["Another", "changed"]
        await session.rollback()


async def test_a_read_is_cut_at_the_engines_statement_timeout_as_a_503(org: OrgClient) -> None:
    short = make_engine(get_settings(), statement_timeout_ms=200)
    try:
        async with tenant_session(short, org.info.schema_name) as session:
            with pytest.raises(asyncpg.exceptions.QueryCanceledError) as caught:
                await read_records(session, "SELECT pg_sleep(2)")
            assert is_unavailable(caught.value)
            rows = await read_records(session, "SELECT 1")  # the connection is usable again
            assert rows[0][0] == 1
    finally:
        await short.dispose()


async def test_a_read_whose_pooled_connection_was_lost_is_tried_again(
    engine: AsyncEngine, org: OrgClient
) -> None:
    await create(org, title="Still readable")
    schema = org.info.schema_name
    async with tenant_session(engine, schema) as session:
        pid = (await read_records(session, "SELECT pg_backend_pid()"))[0][0]
    async with engine.connect() as other:
        assert (
            await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        ).scalar_one()
    for _ in range(3):
        async with tenant_session(engine, schema) as session:
            rows = await read_records(session, "SELECT title FROM questions")
            assert [r[0] for r in rows] == ["Still readable"]
            again = (await read_records(session, "SELECT pg_backend_pid()"))[0][0]
        assert again != pid
