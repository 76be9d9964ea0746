"""Organizations, API keys, and the empty schema the role's search_path points at.

Revision ID: 0001
Revises:
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # A query with no org bound must fail rather than fall through to some schema.
    op.execute("CREATE SCHEMA IF NOT EXISTS unbound")
    op.execute("REVOKE ALL ON SCHEMA unbound FROM PUBLIC")
    op.execute("ALTER ROLE CURRENT_USER SET search_path = unbound")
    op.create_table(
        "organizations",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("slug", sa.String(63), nullable=False, unique=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("plan", sa.String(20), nullable=False),
        sa.Column("schema_name", sa.String(63), nullable=False, unique=True),
        sa.Column("schema_revision", sa.String(64)),
        sa.Column("stripe_customer_id", sa.String(255), unique=True),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
        schema="shared",
    )
    op.create_table(
        "api_keys",
        sa.Column("fingerprint", sa.String(16), primary_key=True),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column(
            "org_id",
            sa.String(40),
            sa.ForeignKey("shared.organizations.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("scopes", pg.ARRAY(sa.String(10)), nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        schema="shared",
    )


def downgrade() -> None:
    op.drop_table("api_keys", schema="shared")
    op.drop_table("organizations", schema="shared")
    op.execute("ALTER ROLE CURRENT_USER RESET search_path")
    op.execute("DROP SCHEMA IF EXISTS unbound")
