"""A real tenant migration over every org schema: a copy of ``migrations/tenant`` plus one new
revision (a column and an index on ``questions``), applied by ``tenancy.schemas.migrate_tenants``
(what ``faq migrate`` runs after the shared tree), timed end to end. Runs last: afterwards the
schemas are one revision past the service's head."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

NEW_REVISION = '''"""bench: a column and an index on questions.

Revision ID: 9001
Revises: {down}
"""

import sqlalchemy as sa
from alembic import op

revision = "9001"
down_revision = "{down}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("questions", sa.Column("bench_views", sa.Integer, nullable=True))
    op.create_index("ix_questions_bench_views", "questions", ["bench_views"])


def downgrade() -> None:
    op.drop_index("ix_questions_bench_views", table_name="questions")
    op.drop_column("questions", "bench_views")
'''


async def _migrate(tree_dir: Path) -> tuple[float, int, int]:
    from tenancy.db import make_engine
    from tenancy.schemas import failed, migrate_tenants, version_tree_at
    from tenancy.settings import get_settings

    engine = make_engine(get_settings(), pool_size=2)
    try:
        started = time.perf_counter()
        reports = await migrate_tenants(engine, tree=version_tree_at(tree_dir))
        return time.perf_counter() - started, len(reports), len(failed(reports))
    finally:
        await engine.dispose()


def run_change(world: Any) -> tuple[float, int]:
    from tenancy.schemas import MIGRATIONS_DIR, version_tree

    folder = Path(tempfile.mkdtemp(prefix="faq-bench-migrations-"))
    tree_dir = folder / "tenant"
    shutil.copytree(
        MIGRATIONS_DIR / "tenant", tree_dir, ignore=shutil.ignore_patterns("__pycache__")
    )
    head = version_tree("tenant").head
    (tree_dir / "versions" / "9001_bench_change.py").write_text(NEW_REVISION.format(down=head))
    elapsed, migrated, failures = asyncio.run(_migrate(tree_dir))
    if failures:
        raise RuntimeError(f"{failures} schemas failed to migrate")
    return elapsed, migrated
