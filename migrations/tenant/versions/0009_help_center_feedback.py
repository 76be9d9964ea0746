"""The help center's readers: one vote per visitor per question ("Was this helpful?") and
the daily count of question page views (each visitor counted once per question per day).

``visitor`` is a keyed hash (a cookie's value, or the client's address when there is no
cookie); no raw address or cookie value is stored.

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "question_votes",
        sa.Column(
            "question_id",
            sa.String(40),
            sa.ForeignKey("questions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("visitor", sa.String(64), primary_key=True),
        sa.Column("helpful", sa.Boolean, nullable=False),
        sa.Column("reason", sa.String(500)),
        sa.Column("locale", sa.String(35), nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "question_views_daily",
        sa.Column(
            "question_id",
            sa.String(40),
            sa.ForeignKey("questions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("views", sa.Integer, nullable=False),
    )
    op.create_index("ix_question_views_daily_day", "question_views_daily", ["day"])


def downgrade() -> None:
    op.drop_table("question_views_daily")
    op.drop_table("question_votes")
