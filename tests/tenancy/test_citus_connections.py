"""Connection set-up on a Citus coordinator: asyncpg introspects every type it has no codec
for on a connection's first use of it, with a query over ``pg_type`` and ``pg_class`` that a
coordinator filters through its shard-hiding check (52 s at ~150 orgs, issue 18). A new
connection of ``make_engine`` sets ``citus.override_table_visibility = off`` (a placeholder on
plain PostgreSQL, so it is observable here) and never introspects a type the schema uses."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import make_engine
from tenancy.settings import get_settings
from tests.fixtures.orgs import OrgClient
from tests.tenancy.citus_capture import Capture

# Every column type of the shared schema and of one org schema, as SQL.
_COLUMN_TYPES = text(
    "SELECT DISTINCT format_type(a.atttypid, NULL) FROM pg_attribute a "
    "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname IN ('shared', :schema) AND c.relkind = 'r' AND a.attnum > 0 "
    "AND NOT a.attisdropped ORDER BY 1"
)


def introspections(statements: list[str]) -> list[str]:
    return [s[:120] for s in statements if "pg_type" in s or "typeinfo" in s]


async def test_new_connections_turn_off_citus_table_visibility(engine: AsyncEngine) -> None:
    fresh = make_engine(get_settings(), pool_size=1)
    try:
        async with fresh.connect() as conn:
            seen = await conn.execute(
                text("SELECT current_setting('citus.override_table_visibility', true)")
            )
            assert seen.scalar() == "off"
    finally:
        await fresh.dispose()


async def test_no_type_introspection_for_any_column_type(org: OrgClient) -> None:
    probe = make_engine(get_settings(), pool_size=1)
    try:
        async with probe.connect() as conn:
            types = list(
                (await conn.execute(_COLUMN_TYPES, {"schema": org.info.schema_name})).scalars()
            )
        assert "character varying[]" in types and "jsonb" in types
        await probe.dispose()
        capture = Capture()
        capture.attach(probe)
        async with probe.connect() as conn:
            for sql_type in types:
                # Read back (a result column) and sent (a parameter) in that type.
                await conn.execute(text(f"SELECT CAST(NULL AS {sql_type})"))
                await conn.exec_driver_sql(f"SELECT $1::{sql_type} IS NULL", (None,))
            # Arrays still round-trip (the codecs declared without introspection work).
            back = await conn.exec_driver_sql(
                "SELECT $1::varchar[], $2::int4[], $3::timestamptz[] IS NULL",
                (["a", "b,c", 'd"e'], [1, 2], None),
            )
            assert back.one() == (["a", "b,c", 'd"e'], [1, 2], True)
        assert introspections(capture.statements) == []
    finally:
        await probe.dispose()
