"""Content for some readers only (issue 39): ``categories.audiences`` and
``questions.audiences`` (audience slugs; empty: everyone) and ``categories.audience_path``, the
non-empty ``audiences`` lists of a category and each of its ancestors, root first (derived:
``api.audiences.visibility.refresh_audience_paths``). Every existing row is for everyone.

Revision ID: 0019
Revises: 0018
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EMPTY = sa.text("'{}'::varchar(100)[]")


def upgrade() -> None:
    for table in ("categories", "questions"):
        op.add_column(
            table,
            sa.Column(
                "audiences", postgresql.ARRAY(sa.String(100)), nullable=False, server_default=EMPTY
            ),
        )
    op.add_column(
        "categories",
        sa.Column(
            "audience_path",
            postgresql.JSONB(),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
        ),
    )


def downgrade() -> None:
    op.drop_column("categories", "audience_path")
    for table in ("categories", "questions"):
        op.drop_column(table, "audiences")
