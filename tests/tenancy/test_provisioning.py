"""A new org's schema is its DDL at head (``provision_tenant_schema``: Alembic's offline script,
data migrations left out); it must be the same schema, row for row, as one that Alembic
migrates step by step from base (``upgrade_tenant_schema``, what ``faq migrate`` runs)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from tenancy.ids import new_id
from tenancy.schemas import (
    _is_data_migration,
    _offline_head_statements,
    provision_tenant_schema,
    upgrade_tenant_schema,
    version_tree,
)

CATALOG = {
    "columns": """
        SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
               character_maximum_length, ordinal_position
        FROM information_schema.columns WHERE table_schema = :s
        ORDER BY table_name, ordinal_position""",
    "indexes": """
        SELECT tablename, indexname, replace(indexdef, :s || '.', '')
        FROM pg_indexes WHERE schemaname = :s ORDER BY indexname""",
    "constraints": """
        SELECT c.conrelid::regclass::text, c.conname, c.contype,
               replace(pg_get_constraintdef(c.oid), :s || '.', '')
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = :s ORDER BY c.conname""",
    "triggers": """
        SELECT t.tgrelid::regclass::text, t.tgname
        FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid
        JOIN pg_namespace n ON n.oid = r.relnamespace
        WHERE n.nspname = :s AND NOT t.tgisinternal ORDER BY t.tgname""",
    "sequences": """
        SELECT sequence_name, data_type FROM information_schema.sequences
        WHERE sequence_schema = :s ORDER BY sequence_name""",
}


async def snapshot(conn: AsyncConnection, schema: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, sql in CATALOG.items():
        rows = (await conn.execute(text(sql), {"s": schema})).all()
        # regclass renders the schema when it is not on the search_path: drop it.
        found[name] = [
            tuple(str(v).replace(f'"{schema}".', "").replace(f"{schema}.", "") for v in row)
            for row in rows
        ]
    tables = [row[0] for row in found["columns"]]
    found["rows"] = {
        table: (await conn.execute(text(f'SELECT count(*) FROM "{schema}"."{table}"'))).scalar()
        for table in sorted(set(tables))
    }
    found["version"] = (
        await conn.execute(text(f'SELECT version_num FROM "{schema}".alembic_version'))
    ).all()
    return found


async def test_provisioned_schema_equals_the_step_by_step_one(engine: AsyncEngine) -> None:
    provisioned, migrated = (f"t_{new_id('org')[4:].lower()}" for _ in range(2))
    async with engine.connect() as conn:
        try:
            async with conn.begin():
                await provision_tenant_schema(conn, provisioned)
                await upgrade_tenant_schema(conn, migrated)
                left, right = await snapshot(conn, provisioned), await snapshot(conn, migrated)
        finally:
            async with conn.begin():
                for schema in (provisioned, migrated):
                    await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    assert left["columns"] and left["indexes"] and left["constraints"]
    assert left["version"] == [(version_tree("tenant").head,)]
    assert left == right


def test_data_migrations_are_left_out_of_provisioning() -> None:
    statements = _offline_head_statements(version_tree("tenant"))
    assert not any(_is_data_migration(s) for s in statements)
    assert not any("COALESCE(CAST(payload" in s for s in statements)
    # The version bookkeeping stays: the schema says which revision it is at.
    assert any(s.startswith("UPDATE alembic_version") for s in statements)
    assert _is_data_migration("UPDATE deliveries SET sent_at = created_at")
    assert _is_data_migration("UPDATE questions AS t SET search_vector = ''")
    assert _is_data_migration('DELETE FROM "outbox" WHERE true')
    assert not _is_data_migration("UPDATE alembic_version SET version_num='0002'")
    assert not _is_data_migration("CREATE TABLE deliveries (id text)")
