"""Content analytics counted per audience (issue 39): each raw search keeps the audiences of
the reader who made it (``search_events.audiences``, slugs, sorted; empty: a reader of no
audience), and two daily aggregates hold one row per audience, never one per reader:
``search_audience_daily`` (day, locale, audience) and ``question_audience_views_daily``
(question, day, audience). The audience ``''`` is the readers of no audience (anonymous).

Revision ID: 0020
Revises: 0019
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EMPTY = sa.text("'{}'::varchar(100)[]")


def upgrade() -> None:
    op.add_column(
        "search_events",
        sa.Column(
            "audiences", postgresql.ARRAY(sa.String(100)), nullable=False, server_default=EMPTY
        ),
    )
    op.create_table(
        "search_audience_daily",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("locale", sa.String(35), primary_key=True),
        sa.Column("audience", sa.String(100), primary_key=True),
        sa.Column("searches", sa.Integer, nullable=False),
        sa.Column("clicks", sa.Integer, nullable=False),
        sa.Column("no_results", sa.Integer, nullable=False),
    )
    op.create_table(
        "question_audience_views_daily",
        sa.Column(
            "question_id",
            sa.String(40),
            sa.ForeignKey("questions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("audience", sa.String(100), primary_key=True),
        sa.Column("views", sa.Integer, nullable=False),
    )
    op.create_index(
        "ix_question_audience_views_daily_day", "question_audience_views_daily", ["day"]
    )


def downgrade() -> None:
    op.drop_index(
        "ix_question_audience_views_daily_day", table_name="question_audience_views_daily"
    )
    op.drop_table("question_audience_views_daily")
    op.drop_table("search_audience_daily")
    op.drop_column("search_events", "audiences")
