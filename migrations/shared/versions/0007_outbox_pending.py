"""The orgs with pending outbox events: the relay's index of which org outboxes to visit.

The outbox itself moves into each org's schema (tenant revision 0007). ``shared.outbox`` is kept
in this release (old processes may still write it during a rolling upgrade; the relay drains
it) and is dropped in a later one.

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outbox_pending",
        sa.Column(
            "org_id",
            sa.String(40),
            sa.ForeignKey("shared.organizations.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "since", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        schema="shared",
    )
    op.create_index("ix_outbox_pending_since", "outbox_pending", ["since"], schema="shared")


def downgrade() -> None:
    op.drop_table("outbox_pending", schema="shared")
