"""A question translation's last author (issue 40): with review required, a translation is
published only by a member with the review scope other than the one who wrote its text (four
eyes, as for drafts). Null for translations written before: any reviewer may publish those.

Revision ID: 0015
Revises: 0014
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("question_translations", sa.Column("author", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("question_translations", "author")
