"""Reads in one round trip (``tenancy.db.read_rows`` and ``read_records``, issue 14): their
pool's connections keep the last org's search_path between reads, so each read must run on its
own org's schema, and a read inside a transaction must see that transaction's writes."""

from __future__ import annotations

import pytest
from sqlalchemy import func, insert, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import make_engine, read_records, read_rows, search_path_of, tenant_session
from tenancy.outbox import OUTBOX
from tenancy.settings import get_settings
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient

SEARCH_PATH = text("SELECT current_setting('search_path')")


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
                path = (await read_rows(session, SEARCH_PATH)).scalar_one()
                assert path == search_path_of(schema)
                found = (await read_rows(session, text("SELECT count(*) FROM questions"))).scalar()
                assert found == count
                # read_records shares the pool and its record of each connection's binding
                # (the setting read in a query of its own: on Citus a query of the org's tables
                # runs on the worker holding its schema, whose session has its own setting)
                rows = await read_records(session, "SELECT current_setting('search_path')")
                assert rows[0][0] == search_path_of(schema)
                rows = await read_records(session, "SELECT count(*) FROM questions")
                assert rows[0][0] == count
                assert not session.in_transaction()  # read outside any transaction
    async with engine.connect() as conn:  # the read pool's bindings never leak to the engine
        assert (await conn.execute(SEARCH_PATH)).scalar_one() == "unbound"


async def test_a_read_inside_a_transaction_sees_its_writes_and_unbound_sql_fails(
    engine: AsyncEngine, org: OrgClient
) -> None:
    async with tenant_session(engine, org.info.schema_name) as session:
        before = (await read_rows(session, select(func.count()).select_from(OUTBOX))).scalar_one()
        await session.execute(
            insert(OUTBOX), [{"event_id": "evt_read_rows", "event": "t", "data": {}}]
        )
        after = (await read_rows(session, select(func.count()).select_from(OUTBOX))).scalar_one()
        assert after == before + 1
        await session.rollback()
    # The read pool's connections are never handed to anything but read_rows: a plain
    # connection of the engine still has no org bound.
    async with engine.connect() as conn:
        path = (await conn.execute(SEARCH_PATH)).scalar_one()
        assert path == "unbound"


async def test_a_tenant_transaction_is_bound_from_its_begin_and_ends_clean(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """A tenant transaction runs on the org's schema with the engine's statement_timeout, a
    failed statement rolls it back, and the connection goes back to the pool with no org bound
    and no transaction."""
    schema = org.info.schema_name
    for _ in range(3):
        async with tenant_session(engine, schema) as session:
            path = (await session.execute(SEARCH_PATH)).scalar_one()
            assert path == search_path_of(schema)
            timeout = (await session.execute(text("SHOW statement_timeout"))).scalar_one()
            assert timeout != "0"
            with pytest.raises(DBAPIError):
                await session.execute(text("SELECT 1 / 0"))
            await session.rollback()
            path = (await session.execute(SEARCH_PATH)).scalar_one()  # a new transaction
            assert path == search_path_of(schema)
            await session.commit()
    async with engine.connect() as conn:
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None and not driver.is_in_transaction()  # none left open
        assert (await conn.execute(SEARCH_PATH)).scalar_one() == "unbound"


async def test_a_read_outside_a_transaction_is_cut_at_the_engines_statement_timeout(
    org: OrgClient,
) -> None:
    """The read pool has no SET LOCAL: its connections carry the engine's statement_timeout
    from their start-up packet, so a slow read is cancelled all the same."""
    short = make_engine(get_settings(), statement_timeout_ms=200)
    try:
        async with tenant_session(short, org.info.schema_name) as session:
            timeout = (await read_rows(session, text("SHOW statement_timeout"))).scalar_one()
            assert timeout == "200ms"
            with pytest.raises(DBAPIError) as caught:
                await read_rows(session, text("SELECT pg_sleep(2)"))
            assert "statement timeout" in str(caught.value.orig)
    finally:
        await short.dispose()


async def test_a_read_whose_pooled_connection_was_lost_is_tried_again(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """PostgreSQL restarted (or a backend was cut) while the read pool kept its connections: a
    read changes nothing, so it is sent again on a new connection instead of failing."""
    await create(org, title="Still readable")
    schema = org.info.schema_name
    async with tenant_session(engine, schema) as session:
        pid = (await read_rows(session, text("SELECT pg_backend_pid()"))).scalar_one()
    async with engine.connect() as other:
        assert (
            await other.execute(
                text("SELECT pg_terminate_backend(CAST(:pid AS integer))"), {"pid": pid}
            )
        ).scalar_one()
    async with tenant_session(engine, schema) as session:
        rows = await read_rows(session, text("SELECT title FROM questions"))
        assert rows.scalars().all() == ["Still readable"]
        again = (await read_rows(session, text("SELECT pg_backend_pid()"))).scalar_one()
    assert again != pid
