"""The event outbox and each org's next scheduled publish time.

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
        "outbox",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("event_id", sa.String(40), nullable=False, unique=True),
        sa.Column(
            "org_id",
            sa.String(40),
            sa.ForeignKey("shared.organizations.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("data", pg.JSONB, nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        schema="shared",
    )
    op.create_table(
        "publish_schedule",
        sa.Column(
            "org_id",
            sa.String(40),
            sa.ForeignKey("shared.organizations.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("next_due_at", TS, nullable=False, index=True),
        schema="shared",
    )


def downgrade() -> None:
    op.drop_table("publish_schedule", schema="shared")
    op.drop_table("outbox", schema="shared")
