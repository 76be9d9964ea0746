"""Imports and exports (issue 29): external ids, import and export jobs.

- ``external_refs``: where an imported question or category came from (``zendesk:360012345``),
  so a second run of the same import updates what the first created.
- ``imports`` / ``import_chunks``: an import job and its upload, stored in 1 MiB pieces (API
  and worker processes on different machines share only PostgreSQL); the pieces are removed
  once the job ends.
- ``exports`` / ``export_chunks``: an export job and its bundle (a zip), kept until it expires.

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "external_refs",
        sa.Column("kind", sa.String(12), primary_key=True),  # "question" | "category"
        sa.Column("external_id", sa.String(300), primary_key=True),
        sa.Column("resource_id", sa.String(40), nullable=False),
    )
    op.create_index("ix_external_refs_resource", "external_refs", ["resource_id"])
    op.create_table(
        "imports",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("format", sa.String(20), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("dry_run", sa.Boolean, nullable=False),
        sa.Column("options", JSONB, nullable=False),
        sa.Column("actor", JSONB, nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("counts", JSONB, nullable=False),
        sa.Column("progress", JSONB, nullable=False),
        sa.Column("errors", JSONB, nullable=False),
        sa.Column("notes", JSONB, nullable=False),
        sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS),
        sa.Column("finished_at", TS),
    )
    op.create_index("ix_imports_created", "imports", ["created_at"])
    op.create_table(
        "import_chunks",
        sa.Column(
            "import_id",
            sa.String(40),
            sa.ForeignKey("imports.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "exports",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("options", JSONB, nullable=False),
        sa.Column("actor", JSONB, nullable=False),
        sa.Column("counts", JSONB, nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("finished_at", TS),
        sa.Column("expires_at", TS),
    )
    op.create_table(
        "export_chunks",
        sa.Column(
            "export_id",
            sa.String(40),
            sa.ForeignKey("exports.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("export_chunks")
    op.drop_table("exports")
    op.drop_table("import_chunks")
    op.drop_table("imports")
    op.drop_table("external_refs")
