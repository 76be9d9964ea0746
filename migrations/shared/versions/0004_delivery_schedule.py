"""Each org's earliest pending webhook delivery, so the re-drive job reads one small table
instead of every org schema.

Revision ID: 0004
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "delivery_schedule",
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
    op.drop_table("delivery_schedule", schema="shared")
