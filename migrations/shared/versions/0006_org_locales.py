"""The locales an organization serves and its default locale (issue 15: translations).

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "organizations",
        sa.Column("default_locale", sa.String(35), nullable=False, server_default="en"),
        schema="shared",
    )
    op.add_column(
        "organizations",
        sa.Column(
            "locales",
            pg.ARRAY(sa.String(35)),
            nullable=False,
            server_default=sa.text("'{en}'::varchar[]"),
        ),
        schema="shared",
    )


def downgrade() -> None:
    op.drop_column("organizations", "locales", schema="shared")
    op.drop_column("organizations", "default_locale", schema="shared")
