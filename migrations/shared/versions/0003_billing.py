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
        # Stripe's `created` of the event: the order events are applied in.
        sa.Column("created", TS, nullable=False),
        sa.Column("payload", pg.JSONB, nullable=False),
        sa.Column("received_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("processed_at", TS),
        # What applying it did (`plan_changed`, `stale`, `org_unknown`, ...), for ops.
        sa.Column("outcome", sa.String(40)),
        schema="shared",
    )
    # The re-drive job reads only the events not yet applied.
    op.create_index(
        "ix_stripe_events_pending",
        "stripe_events",
        ["created"],
        schema="shared",
        postgresql_where=sa.text("processed_at IS NULL"),
    )
    op.create_table(
        "stripe_subscriptions",
        sa.Column("id", sa.String(255), primary_key=True),
        sa.Column(
            "org_id",
            sa.String(40),
            sa.ForeignKey("shared.organizations.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("customer_id", sa.String(255)),
        sa.Column("status", sa.String(40), nullable=False),
        # The plan this subscription grants as of its last applied event (NULL: none).
        sa.Column("plan", sa.String(20)),
        sa.Column("last_event_created", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
        schema="shared",
    )


def downgrade() -> None:
    op.drop_table("stripe_subscriptions", schema="shared")
    op.drop_index("ix_stripe_events_pending", table_name="stripe_events", schema="shared")
    op.drop_table("stripe_events", schema="shared")
