"""Indexes for bounded delivery history: the daily purge takes the oldest deliveries in
batches (``created_at``), and recover skips failed deliveries already re-sent (``replay_of``).

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


def upgrade() -> None:
    op.create_index("ix_deliveries_created_at", "deliveries", ["created_at"])
    op.create_index(
        "ix_deliveries_replay_of",
        "deliveries",
        ["replay_of"],
        postgresql_where=sa.text("replay_of IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_deliveries_replay_of", "deliveries")
    op.drop_index("ix_deliveries_created_at", "deliveries")
