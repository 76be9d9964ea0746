"""Help center theming (issue 32): the org's logo, one row per org schema (its bytes beside
the org's other content, so they move with the schema; at most ``MAX_LOGO_BYTES``, 256 KiB,
checked by the upload and by this table).

Revision ID: 0014
Revises: 0013
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


MAX_LOGO_BYTES = 256 * 1024


def upgrade() -> None:
    op.create_table(
        "help_center_logo",
        sa.Column("id", sa.SmallInteger, primary_key=True),  # always 1: one logo
        sa.Column("content_type", sa.String(32), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("id = 1", name="one_logo"),
        sa.CheckConstraint(f"octet_length(data) <= {MAX_LOGO_BYTES}", name="logo_size"),
    )


def downgrade() -> None:
    op.drop_table("help_center_logo")
