"""Questions, their revisions, and idempotency keys of question creates.

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "questions",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("slug", sa.String(200), nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("answer", sa.Text, nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column(
            "category_id", sa.String(40), sa.ForeignKey("categories.id"), nullable=False, index=True
        ),
        sa.Column("sort_order", sa.Integer, nullable=False, server_default="0"),
        sa.Column("published_at", TS),
        sa.Column("scheduled_publish_at", TS),
        sa.Column("search_vector", pg.TSVECTOR, nullable=False),
        sa.Column("revision_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("deleted_at", TS),
    )
    op.create_index(
        "uq_questions_slug_live",
        "questions",
        ["slug"],
        unique=True,
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_index(
        "ix_questions_sort_order_id_live",
        "questions",
        ["sort_order", "id"],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_index(
        "ix_questions_due",
        "questions",
        ["scheduled_publish_at"],
        postgresql_where=sa.text("status = 'scheduled' AND deleted_at IS NULL"),
    )
    op.create_index(
        "ix_questions_deleted_at",
        "questions",
        ["deleted_at"],
        postgresql_where=sa.text("deleted_at IS NOT NULL"),
    )
    op.create_index(
        "ix_questions_search_vector", "questions", ["search_vector"], postgresql_using="gin"
    )
    op.create_table(
        "question_revisions",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column(
            "question_id",
            sa.String(40),
            sa.ForeignKey("questions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("actor", pg.JSONB, nullable=False),
        sa.Column("changed_fields", pg.JSONB, nullable=False),
        sa.Column("snapshot", pg.JSONB, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("question_id", "number"),
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("key", sa.String(255), primary_key=True),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("response_status", sa.Integer),
        sa.Column("response_body", pg.JSONB),
        sa.Column("created_at", TS, nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
    op.drop_table("question_revisions")
    op.drop_table("questions")
