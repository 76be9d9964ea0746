"""With ``citus.enable_schema_based_sharding`` on, Citus makes any schema created (even by
``CREATE SCHEMA IF NOT EXISTS`` on an existing one) a distributed tenant schema: ``faq
migrate`` must run the shared tree with it off for its transaction, whatever the role's or the
database's default. Plain PostgreSQL accepts the ``citus.*`` placeholder setting, so the value
the migrations run under is observable here."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import text

from tenancy.schemas import MIGRATIONS_DIR, upgrade_shared_schema, version_tree, version_tree_at
from tests.fixtures.services import Services
from tests.tenancy.citus_capture import Capture, fresh_database

SEEN_MIGRATION = '''"""Test-only: the schema-based sharding setting the migration runs under.

Revision ID: 9101
Revises: {head}
"""

from alembic import op

revision = "9101"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE TABLE shared.sharding_seen AS "
        "SELECT current_setting('citus.enable_schema_based_sharding', true) AS value"
    )


def downgrade() -> None:
    op.execute("DROP TABLE shared.sharding_seen")
'''


async def test_shared_migrations_run_with_schema_based_sharding_off(
    services: Services, tmp_path: Path
) -> None:
    async with fresh_database(services, "citus_shared") as engine:
        async with engine.connect() as conn:
            name = (await conn.execute(text("SELECT current_database()"))).scalar_one()
            await conn.execute(
                text(f"ALTER DATABASE {name} SET citus.enable_schema_based_sharding = 'on'")
            )
            await conn.commit()
        await engine.dispose()  # new connections pick up the database default

        tree_dir = tmp_path / "shared"
        shutil.copytree(MIGRATIONS_DIR / "shared", tree_dir)
        head = version_tree("shared").head
        (tree_dir / "versions" / "9101_test_sharding_seen.py").write_text(
            SEEN_MIGRATION.format(head=head)
        )
        capture = Capture()
        capture.attach(engine)
        applied = await upgrade_shared_schema(engine, tree=version_tree_at(tree_dir))
        assert applied[-1] == "9101"

        sent = [s.strip() for s in capture.statements]
        off = [i for i, s in enumerate(sent) if "enable_schema_based_sharding" in s]
        schemas = [i for i, s in enumerate(sent) if s.upper().startswith("CREATE SCHEMA")]
        assert off and schemas and off[0] < schemas[0], sent[:6]
        async with engine.connect() as conn:
            seen = (await conn.execute(text("SELECT value FROM shared.sharding_seen"))).scalar()
            assert seen == "off"
            # LOCAL to the migration's transaction: the default is untouched afterwards.
            after = await conn.execute(
                text("SELECT current_setting('citus.enable_schema_based_sharding', true)")
            )
            assert after.scalar() == "on"
