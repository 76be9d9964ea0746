"""Index the outbox by org, for the relay's per-org claim of its events.

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_outbox_org_id_id", "outbox", ["org_id", "id"], schema="shared")


def downgrade() -> None:
    op.drop_index("ix_outbox_org_id_id", table_name="outbox", schema="shared")
