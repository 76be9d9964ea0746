"""Citus propagates a distributed schema's DDL to its worker by query string, and a worker
refuses a string of several commands: provisioning (``faq orgs create``) and migrations
(``faq migrate``) must send one statement per query string. Captured at the driver."""

from __future__ import annotations

import shutil
from pathlib import Path

from api.orgs import create_org
from billing.plans import Plan
from tenancy.schemas import (
    MIGRATIONS_DIR,
    migrate_tenants,
    upgrade_shared_schema,
    version_tree,
    version_tree_at,
)
from tests.fixtures.services import Services
from tests.tenancy.citus_capture import Capture, fresh_database, statement_count
from tests.tenancy.test_migrations import NEW_MIGRATION


def multi(statements: list[str]) -> list[str]:
    return [s[:200] for s in statements if statement_count(s) > 1]


async def test_provisioning_and_migrations_send_one_statement_per_string(
    services: Services, tmp_path: Path
) -> None:
    async with fresh_database(services, "citus_stmts") as engine:
        capture = Capture()
        capture.attach(engine)
        await upgrade_shared_schema(engine)
        org = await create_org(engine, "one-by-one", None, Plan.FREE)
        sent = list(capture.statements)
        assert any("CREATE TABLE" in s and "categories" in s for s in sent)
        assert any(org.schema_name in s and "CREATE SCHEMA" in s for s in sent)

        tree_dir = tmp_path / "tenant"
        shutil.copytree(MIGRATIONS_DIR / "tenant", tree_dir)
        head = version_tree("tenant").head
        (tree_dir / "versions" / "9001_test_add_color.py").write_text(
            NEW_MIGRATION.format(head=head)
        )
        reports = await migrate_tenants(engine, tree=version_tree_at(tree_dir))
        assert [(r.applied, r.error) for r in reports] == [(["9001"], None)]
        assert any("ix_categories_color" in s for s in capture.statements)
        assert multi(capture.statements) == []
