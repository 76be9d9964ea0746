"""`faq migrate`: shared first, then every tenant schema behind head; a no-op costs no DDL."""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.orgs import create_org
from billing.plans import Plan
from tenancy.db import make_engine
from tenancy.schemas import (
    MIGRATIONS_DIR,
    migrate_tenants,
    upgrade_shared_schema,
    version_tree,
    version_tree_at,
)
from tenancy.settings import get_settings
from tests.fixtures.services import Services

NEW_MIGRATION = '''"""Test-only: add a column and an index.

Revision ID: 9001
Revises: {head}
"""

import sqlalchemy as sa
from alembic import op

revision = "9001"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("categories", sa.Column("color", sa.String(20)))
    op.create_index("ix_categories_color", "categories", ["color"])


def downgrade() -> None:
    op.drop_index("ix_categories_color", "categories")
    op.drop_column("categories", "color")
'''


@pytest.fixture
async def fresh_database(services: Services) -> AsyncIterator[AsyncEngine]:
    """A database of its own, so a test-only migration never reaches other tests' orgs."""
    name = f"migrations_{int(time.time() * 1000)}"
    admin = make_engine(get_settings(), pool_size=1)
    async with admin.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text(f"CREATE DATABASE {name}"))
    settings = get_settings().model_copy(
        update={"database_url": services.postgres.url.rsplit("/", 1)[0] + f"/{name}"}
    )
    engine = make_engine(settings, pool_size=4)
    await upgrade_shared_schema(engine)
    try:
        yield engine
    finally:
        await engine.dispose()
        async with admin.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
        await admin.dispose()


async def test_migrate_at_head_is_a_noop(fresh_database: AsyncEngine) -> None:
    for i in range(3):
        await create_org(fresh_database, f"noop-{i}", None, Plan.FREE)
    assert await upgrade_shared_schema(fresh_database) == []
    assert await migrate_tenants(fresh_database) == []
    assert await migrate_tenants(fresh_database) == []


async def test_new_tenant_migration_reaches_every_existing_org(
    fresh_database: AsyncEngine, tmp_path: Path
) -> None:
    orgs = [await create_org(fresh_database, f"mig-{i}", None, Plan.FREE) for i in range(3)]
    tree_dir = tmp_path / "tenant"
    shutil.copytree(MIGRATIONS_DIR / "tenant", tree_dir)
    head = version_tree("tenant").head
    (tree_dir / "versions" / "9001_test_add_color.py").write_text(NEW_MIGRATION.format(head=head))
    extended = version_tree_at(tree_dir)
    assert extended.head == "9001"

    reports = await migrate_tenants(fresh_database, tree=extended)
    assert sorted(r.org_slug for r in reports) == ["mig-0", "mig-1", "mig-2"]
    assert [(r.applied, r.error) for r in reports] == [(["9001"], None)] * 3
    async with fresh_database.connect() as conn:
        for org in orgs:
            column = await conn.execute(
                text(
                    "SELECT 1 FROM information_schema.columns WHERE table_schema = :s "
                    "AND table_name = 'categories' AND column_name = 'color'"
                ),
                {"s": org.schema_name},
            )
            assert column.scalar() == 1
            version = await conn.execute(
                text(f'SELECT version_num FROM "{org.schema_name}".alembic_version')
            )
            assert version.scalar() == "9001"
    # The second run has nothing to do.
    assert await migrate_tenants(fresh_database, tree=extended) == []


@pytest.mark.serial  # a bound on time: run with the machine to itself
async def test_org_creation_is_fast_and_complete(fresh_database: AsyncEngine) -> None:
    started = time.perf_counter()
    org = await create_org(fresh_database, "quick", "Quick Ltd", Plan.PRO)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, elapsed
    async with fresh_database.connect() as conn:
        tables = set(
            (
                await conn.execute(
                    text(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = :s"
                    ),
                    {"s": org.schema_name},
                )
            ).scalars()
        )
        default = await conn.execute(
            text(f'SELECT slug, is_default FROM "{org.schema_name}".categories')
        )
        assert default.all() == [("uncategorized", True)]
    assert {"categories", "questions", "webhooks", "audit_log", "alembic_version"} <= tables


async def test_concurrent_org_creation_in_one_process(fresh_database: AsyncEngine) -> None:
    import asyncio

    orgs = await asyncio.gather(
        *(create_org(fresh_database, f"par-{i}", None, Plan.FREE) for i in range(5))
    )
    async with fresh_database.connect() as conn:
        for org in orgs:
            count = await conn.execute(text(f'SELECT count(*) FROM "{org.schema_name}".categories'))
            assert count.scalar() == 1
    assert await migrate_tenants(fresh_database) == []
