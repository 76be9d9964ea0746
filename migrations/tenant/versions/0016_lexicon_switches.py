"""The support lexicon's switches (issue 38): the groups of the built-in lexicon
(``api/answers/lexicon.py``) an org switched off in a locale, beside its own synonym groups of
that locale. Empty (every group on) for every existing row.

Revision ID: 0016
Revises: 0015
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "synonyms",
        sa.Column(
            "lexicon_off", postgresql.JSONB(), nullable=False, server_default=sa.text("'[]'::jsonb")
        ),
    )


def downgrade() -> None:
    op.drop_column("synonyms", "lexicon_off")
