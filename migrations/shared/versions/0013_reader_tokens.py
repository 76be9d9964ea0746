"""Reader tokens (issue 39): ``organizations.readers`` (jsonb) holds how the org's own
application signs its readers' tokens: the accepted issuer, the maximum lifetime and the
verification keys (HS256 secrets encrypted with ``FAQ_SECRET_KEY``, or RS256/ES256 public
keys). Empty (no reader tokens accepted) for every existing org.

Revision ID: 0013
Revises: 0012
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "organizations",
        sa.Column(
            "readers", postgresql.JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")
        ),
        schema="shared",
    )


def downgrade() -> None:
    op.drop_column("organizations", "readers", schema="shared")
