"""Categories and the audit log.

Revision ID: 0001
Revises:

Tenant migrations run with the org's schema first on the search_path, so tables here are
created unqualified and land in that schema.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "categories",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("slug", sa.String(100), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("sort_order", sa.Integer, nullable=False, server_default="0"),
        sa.Column("parent_id", sa.String(40), sa.ForeignKey("categories.id"), index=True),
        sa.Column("is_default", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("search_vector", pg.TSVECTOR, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("deleted_at", TS),
    )
    op.create_index(
        "uq_categories_slug_live",
        "categories",
        ["slug"],
        unique=True,
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_index(
        "ix_categories_sort_order_id_live",
        "categories",
        ["sort_order", "id"],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_index(
        "ix_categories_search_vector", "categories", ["search_vector"], postgresql_using="gin"
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("resource_type", sa.String(20), nullable=False),
        sa.Column("resource_id", sa.String(40)),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("actor", pg.JSONB, nullable=False),
        sa.Column("before", pg.JSONB),
        sa.Column("after", pg.JSONB),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index(
        "ix_audit_log_resource_type_created_at", "audit_log", ["resource_type", "created_at", "id"]
    )


def downgrade() -> None:
    op.drop_table("audit_log")
    op.drop_table("categories")
