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
from tenancy.db import make_engine, read_records, tenant_session
from tenancy.settings import get_settings
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient


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
            await other.execute(
                text("SELECT pg_terminate_backend(CAST(:pid AS integer))"), {"pid": pid}
            )
        ).scalar_one()
    for _ in range(3):
        async with tenant_session(engine, schema) as session:
            rows = await read_records(session, "SELECT title FROM questions")
            assert [r[0] for r in rows] == ["Still readable"]
            again = (await read_records(session, "SELECT pg_backend_pid()"))[0][0]
        assert again != pid
