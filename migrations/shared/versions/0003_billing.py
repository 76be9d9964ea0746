"""Stripe events (stored once by id) and the subscriptions they were applied to.

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
        "stripe_events",
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column("type", sa.String(100), nullable=False),
        sa.Column("created", TS, nullable=False),
        sa.Column("payload", pg.JSONB, nullable=False),
        sa.Column("received_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("processed_at", TS),
        schema="shared",
    )
    op.create_table(
        "stripe_subscriptions",
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column(
            "org_id",
            sa.String(40),
            sa.ForeignKey("shared.organizations.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("status", sa.String(40), nullable=False),
        sa.Column("last_event_created", TS, nullable=False),
        schema="shared",
    )


def downgrade() -> None:
    op.drop_table("stripe_subscriptions", schema="shared")
    op.drop_table("stripe_events", schema="shared")
