"""Citus propagates a distributed schema's DDL to its worker by query string, and a worker
refuses a string of several commands: provisioning (``faq orgs create``) and migrations
(``faq migrate``) must send one statement per query string. Captured at the driver."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import text

from api.orgs import create_org
from billing.plans import Plan
from tenancy.schemas import (
    MIGRATIONS_DIR,
    migrate_tenants,
    upgrade_shared_schema,
    upgrade_tenant_schema,
    version_tree,
    version_tree_at,
)
from tests.fixtures.services import Services
from tests.tenancy.citus_capture import Capture, fresh_database, statement_count
from tests.tenancy.citus_rules import refusals
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


async def test_provisioning_and_migrations_send_nothing_citus_refuses(
    services: Services, tmp_path: Path
) -> None:
    """Every write that ``faq orgs create`` and ``faq migrate`` send (the latter from the
    oldest revision, data migrations included, on a schema holding data) passes the rules of
    ``citus_rules``; issue 27 found provisioning replaying ``COALESCE(CAST(text AS
    timestamptz), …)``."""
    async with fresh_database(services, "citus_rules") as engine:
        capture = Capture()
        capture.attach(engine)
        await upgrade_shared_schema(engine)
        org = await create_org(engine, "provisioned", None, Plan.FREE)
        sent = list(capture.statements)
        # An org whose schema is at revision 0004 with a delivery, then `faq migrate`.
        old = await create_org(engine, "older", None, Plan.FREE)
        tree_dir = tmp_path / "tenant"
        shutil.copytree(MIGRATIONS_DIR / "tenant", tree_dir)
        for version in (tree_dir / "versions").glob("*.py"):
            if version.name >= "0005":
                version.unlink()
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f'DROP SCHEMA "{old.schema_name}" CASCADE')
            await upgrade_tenant_schema(conn, old.schema_name, version_tree_at(tree_dir))
            await conn.exec_driver_sql(f'SET LOCAL search_path TO "{old.schema_name}"')
            await conn.exec_driver_sql(
                "INSERT INTO webhooks (id, url, events, secret_ciphertext, created_at, updated_at)"
                " VALUES ('wh_1', 'https://example.com/h', '{ping}', 'x', now(), now())"
            )
            await conn.exec_driver_sql(
                "INSERT INTO deliveries (id, webhook_id, event, data, status, payload,"
                " next_attempt_at, created_at, updated_at) VALUES ('dlv_1', 'wh_1', 'ping',"
                " '{}', 'pending', '{\"timestamp\": \"2026-01-02T03:04:05.678Z\"}', now(),"
                " now(), now())"
            )
            await conn.execute(
                text("UPDATE shared.organizations SET schema_revision = '0004' WHERE id = :id"),
                {"id": old.id},
            )
        capture.statements.clear()
        reports = await migrate_tenants(engine)
        assert [(r.org_slug, r.error) for r in reports] == [("older", None)]
        migrated = list(capture.statements)
        assert any("sent_at" in s for s in migrated)  # the data migration ran
        offenders = await refusals(engine, org.schema_name, sent + migrated)
        assert offenders == {}, offenders
