"""Webhooks and their deliveries.

Revision ID: 0003
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("events", pg.ARRAY(sa.String(40)), nullable=False),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("description", sa.String(500)),
        sa.Column("secret_ciphertext", sa.Text, nullable=False),
        sa.Column("delivery_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("deleted_at", TS),
    )
    op.create_table(
        "deliveries",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("webhook_id", sa.String(40), sa.ForeignKey("webhooks.id"), nullable=False),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("data", pg.JSONB, nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("attempts", pg.JSONB, nullable=False, server_default="[]"),
        # Attempts started (a worker lost mid-attempt leaves one started but unrecorded).
        sa.Column("attempt_count", sa.Integer, nullable=False, server_default="0"),
        # The claim of the attempt in flight: only its holder may schedule the next one.
        sa.Column("lease_token", sa.String(32)),
        sa.Column("attempt_started_at", TS),
        sa.Column("next_attempt_at", TS),
        sa.Column("replay_of", sa.String(40)),
        sa.Column("payload", pg.JSONB),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index(
        "ix_deliveries_webhook_id_created_at", "deliveries", ["webhook_id", "created_at", "id"]
    )
    op.create_index(
        "ix_deliveries_pending",
        "deliveries",
        ["next_attempt_at"],
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "ix_deliveries_pending_webhook_id",
        "deliveries",
        ["webhook_id"],
        postgresql_where=sa.text("status = 'pending'"),
    )


def downgrade() -> None:
    op.drop_table("deliveries")
    op.drop_table("webhooks")
