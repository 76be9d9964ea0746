"""Team publishing (issue 30): keys that belong to a member.

``member_id`` names a member of the key's org (``members`` lives in the org's schema, so no
foreign key crosses schemas); null for a key of no one in particular.

Revision ID: 0011
Revises: 0010
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("member_id", sa.String(40)), schema="shared")
    # A member's deactivation revokes its keys: found by this index.
    op.create_index(
        "ix_api_keys_org_id_member_id",
        "api_keys",
        ["org_id", "member_id"],
        schema="shared",
        postgresql_where=sa.text("member_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_api_keys_org_id_member_id", "api_keys", schema="shared")
    op.drop_column("api_keys", "member_id", schema="shared")
