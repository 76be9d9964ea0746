"""Schema provisioning and migration: the shared tree once, the tenant tree per org schema.

``shared.organizations.schema_revision`` records the tenant head each schema is at, so a
``faq migrate`` with nothing to do costs one query, not one per schema.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from tenancy.db import SHARED_SCHEMA, UNBOUND_SCHEMA, checked_schema_name
from tenancy.loop_resources import per_loop

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
SHARDING_OFF = "SET LOCAL citus.enable_schema_based_sharding TO off"


@dataclass(frozen=True)
class VersionTree:
    config: Config
    script: ScriptDirectory

    @property
    def head(self) -> str:
        head = self.script.get_current_head()
        assert head is not None
        return head


@cache
def version_tree_at(path: Path) -> VersionTree:
    config = Config()
    config.set_main_option("script_location", str(path))
    return VersionTree(config, ScriptDirectory.from_config(config))


def version_tree(name: str) -> VersionTree:
    """``shared`` or ``tenant``: the trees under ``migrations/``."""
    return version_tree_at(MIGRATIONS_DIR / name)


def _upgrade(sync_conn: Connection, tree: VersionTree, version_schema: str) -> list[str]:
    """Upgrade inside the connection's open transaction; returns the revisions applied."""
    applied: list[str] = []

    def upgrade_steps(rev: Any, _context: Any) -> Any:
        steps = tree.script._upgrade_revs("head", rev)
        applied.extend(step.revision.revision for step in steps)
        return steps

    with EnvironmentContext(
        tree.config, tree.script, fn=upgrade_steps, destination_rev="head"
    ) as env:
        env.configure(
            connection=sync_conn,
            version_table_schema=version_schema,
            transactional_ddl=True,
        )
        with env.begin_transaction():
            env.run_migrations()
    return applied


def _upgrade_tenant_sync(sync_conn: Connection, schema: str, tree: VersionTree) -> list[str]:
    checked_schema_name(schema)
    sync_conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    # Local to this transaction: migrations create unqualified tables in the org's schema.
    sync_conn.exec_driver_sql(f'SET LOCAL search_path TO "{schema}"')
    applied = _upgrade(sync_conn, tree, schema)
    sync_conn.exec_driver_sql(f"SET LOCAL search_path TO {UNBOUND_SCHEMA}")
    return applied


async def _no_close(_lock: asyncio.Lock) -> None:
    return None


def _alembic_lock() -> asyncio.Lock:
    """Alembic's ``op``/``context`` are process-wide proxies: one migration at a time per
    process (coroutines of one loop would otherwise run each other's operations)."""
    return per_loop("alembic_lock", asyncio.Lock, _no_close)


async def upgrade_tenant_schema(
    conn: AsyncConnection, schema: str, tree: VersionTree | None = None
) -> list[str]:
    """Create (if needed) and migrate one org schema in the caller's transaction."""
    async with _alembic_lock():
        return await conn.run_sync(_upgrade_tenant_sync, schema, tree or version_tree("tenant"))


_head_scripts: dict[str, tuple[str, ...]] = {}


def _is_data_migration(sql: str) -> bool:
    """An UPDATE or DELETE of a table other than ``alembic_version``: a data migration, which
    finds no row in a new schema (no migration seeds rows; ``tests/tenancy/test_provisioning.py``
    checks that a provisioned schema equals one migrated step by step)."""
    words = sql.split(None, 3)
    verb = words[0].upper() if words else ""
    if verb == "UPDATE":
        target = words[1] if len(words) > 1 else ""
    elif verb == "DELETE" and len(words) > 2 and words[1].upper() == "FROM":
        target = words[2]
    else:
        return False
    return target.strip('"') != "alembic_version"


def _offline_head_statements(tree: VersionTree) -> tuple[str, ...]:
    """The tenant tree from base to head as SQL statements, one per string (Alembic's offline
    mode, each statement it emits kept apart), with unqualified names: they run with the new
    schema first on the search_path. Data migrations are left out (``_is_data_migration``):
    a new schema has no rows for them, and on Citus the schema is distributed by its
    ``CREATE SCHEMA``, where an UPDATE of a past revision may use what Citus refuses (issue
    27: ``COALESCE(CAST(text AS timestamptz), …)``)."""
    statements: list[str] = []

    def upgrade_steps(rev: Any, _context: Any) -> Any:
        return tree.script._upgrade_revs("head", rev)

    def keep(sql: str) -> None:
        sql = sql.strip()
        if sql and not sql.startswith("--") and not _is_data_migration(sql):
            statements.append(sql.removesuffix(";"))

    with EnvironmentContext(
        tree.config, tree.script, fn=upgrade_steps, as_sql=True, destination_rev="head"
    ) as env:
        env.configure(
            dialect_name="postgresql",
            output_buffer=io.StringIO(),
            transactional_ddl=False,
            literal_binds=True,
        )
        env.get_context().impl.static_output = keep  # type: ignore[method-assign,assignment]
        with env.begin_transaction():
            env.run_migrations()
    return tuple(statements)


async def provision_tenant_schema(
    conn: AsyncConnection, schema: str, tree: VersionTree | None = None
) -> None:
    """Create a new org's schema at the tenant head in the caller's transaction: the same DDL
    Alembic would run step by step (its offline script, rendered once per process).

    One statement per query string: Citus propagates a distributed schema's DDL to the node
    holding it by query string, and a node refuses a string of several commands. On plain
    PostgreSQL the round trips cost little (``docs/scaling.md``: org creation p95 measured
    before and after), so there is one code path for both."""
    tree = tree or version_tree("tenant")
    key = str(tree.script.dir)
    if key not in _head_scripts:
        async with _alembic_lock():
            _head_scripts[key] = _offline_head_statements(tree)
    checked_schema_name(schema)
    # Through SQLAlchemy first: it opens the driver's transaction if the caller's has not
    # sent anything yet (the statements below must not run in autocommit).
    await conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None and driver.is_in_transaction()
    await driver.execute(f'SET LOCAL search_path TO "{schema}"')
    for statement in _head_scripts[key]:
        await driver.execute(statement)
    await driver.execute(f"SET LOCAL search_path TO {UNBOUND_SCHEMA}")


async def upgrade_shared_schema(engine: AsyncEngine, tree: VersionTree | None = None) -> list[str]:
    async with engine.begin() as conn:
        # Serialize concurrent `faq migrate` runs (e.g. two Helm hook retries).
        await conn.execute(text("SELECT pg_advisory_xact_lock(872301)"))
        # On Citus with schema-based sharding on (the role's default, docs/scaling.md), any
        # CREATE SCHEMA, even IF NOT EXISTS on an existing one, would make `shared` and
        # `unbound` distributed tenant schemas. Off for this transaction only; plain
        # PostgreSQL takes it as a placeholder setting and ignores it.
        await conn.exec_driver_sql(SHARDING_OFF)
        await conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {SHARED_SCHEMA}")
        await conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {UNBOUND_SCHEMA}")
        async with _alembic_lock():
            return await conn.run_sync(_upgrade, tree or version_tree("shared"), SHARED_SCHEMA)


@dataclass
class SchemaReport:
    org_slug: str
    schema: str
    applied: list[str]
    error: str | None = None


async def migrate_tenants(
    engine: AsyncEngine,
    *,
    on_report: Callable[[SchemaReport], None] | None = None,
    tree: VersionTree | None = None,
) -> list[SchemaReport]:
    """Bring every org schema that is behind the tenant head up to it, one transaction each.

    Sequential on purpose: Alembic's ``op`` and ``context`` are process-wide proxies.
    """
    tree = tree or version_tree("tenant")
    head = tree.head
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT id, slug, schema_name FROM shared.organizations "
                    "WHERE schema_revision IS DISTINCT FROM :head ORDER BY created_at"
                ),
                {"head": head},
            )
        ).all()
    reports: list[SchemaReport] = []
    for org_id, slug, schema in rows:
        report = SchemaReport(slug, schema, [])
        try:
            async with engine.begin() as conn:
                # Lock the org row so a concurrent migrate waits, then finds it done.
                locked = await conn.execute(
                    text(
                        "SELECT schema_revision FROM shared.organizations WHERE id = :id FOR UPDATE"
                    ),
                    {"id": org_id},
                )
                if locked.scalar_one_or_none() == head:
                    continue
                report.applied = await upgrade_tenant_schema(conn, schema, tree)
                await conn.execute(
                    text("UPDATE shared.organizations SET schema_revision = :head WHERE id = :id"),
                    {"head": head, "id": org_id},
                )
        except Exception as exc:  # reported per schema; the others still migrate
            report.error = f"{type(exc).__name__}: {exc}"
        reports.append(report)
        if on_report is not None:
            on_report(report)
    return reports


def failed(reports: Iterable[SchemaReport]) -> list[SchemaReport]:
    return [r for r in reports if r.error is not None]
