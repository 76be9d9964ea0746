"""Keys managed by API (name, allowed origins, expiry, last use, revocation time) and the
help center's settings of each organization (issue 16: readers).

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column(
        "api_keys",
        sa.Column("name", sa.String(200), nullable=False, server_default=""),
        schema="shared",
    )
    op.add_column(
        "api_keys",
        sa.Column(
            "allowed_origins",
            pg.ARRAY(sa.String(255)),
            nullable=False,
            server_default=sa.text("'{}'::varchar[]"),
        ),
        schema="shared",
    )
    op.add_column("api_keys", sa.Column("expires_at", TS), schema="shared")
    op.add_column("api_keys", sa.Column("last_used_at", TS), schema="shared")
    op.add_column("api_keys", sa.Column("revoked_at", TS), schema="shared")
    # {"enabled": bool, "title": str, "primaryColor": "#rrggbb"}; off by default.
    op.add_column(
        "organizations",
        sa.Column(
            "help_center",
            pg.JSONB,
            nullable=False,
            server_default=sa.text("'{\"enabled\": false}'::jsonb"),
        ),
        schema="shared",
    )


def downgrade() -> None:
    op.drop_column("organizations", "help_center", schema="shared")
    for column in ("revoked_at", "last_used_at", "expires_at", "allowed_origins", "name"):
        op.drop_column("api_keys", column, schema="shared")
