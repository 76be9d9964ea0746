"""The org's audit log, written from the outbox by the relay (``audit_entries``), and content
analytics: raw searches of readers (``search_events``, kept 90 days) and daily aggregates
(``search_daily``, ``question_feedback_daily``, kept two years; views are in
``question_views_daily`` of revision 0009).

Revision ID: 0010
Revises: 0009
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "audit_entries",
        # "aud_" + the ULID of the outbox event it came from: a twice-relayed event is one entry.
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("resource", sa.String(20), nullable=False),
        sa.Column("resource_id", sa.String(64)),
        sa.Column("action", sa.String(40), nullable=False),
        sa.Column("actor", JSONB, nullable=False),
        # The actor as the ``actor`` filter names it: a key fingerprint, or "system".
        sa.Column("actor_key", sa.String(40), nullable=False),
        sa.Column("before", JSONB),
        sa.Column("after", JSONB),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_audit_entries_created", "audit_entries", ["created_at", "id"])
    op.create_index(
        "ix_audit_entries_resource", "audit_entries", ["resource", "resource_id", "created_at"]
    )
    op.create_index("ix_audit_entries_actor", "audit_entries", ["actor_key", "created_at"])

    op.create_table(
        "search_events",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("at", TS, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),  # "help_center" | "api"
        sa.Column("locale", sa.String(35), nullable=False),
        sa.Column("query", sa.String(200), nullable=False),  # normalised
        sa.Column("results", sa.Integer, nullable=False),
        sa.Column("visitor", sa.String(64), nullable=False),  # hashed, salt rotated daily
        sa.Column("clicked_question_id", sa.String(40)),  # the result opened next, if any
    )
    op.create_index("ix_search_events_at", "search_events", ["at"])
    op.create_table(
        "search_daily",
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("locale", sa.String(35), primary_key=True),
        sa.Column("query", sa.String(200), primary_key=True),
        sa.Column("searches", sa.Integer, nullable=False),
        sa.Column("clicks", sa.Integer, nullable=False),
        sa.Column("no_results", sa.Integer, nullable=False),
    )
    op.create_table(
        "question_feedback_daily",
        sa.Column(
            "question_id",
            sa.String(40),
            sa.ForeignKey("questions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("day", sa.Date, primary_key=True),
        sa.Column("helpful", sa.Integer, nullable=False),
        sa.Column("unhelpful", sa.Integer, nullable=False),
        # The unhelpful votes' reasons: {reason: count}.
        sa.Column("reasons", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    )
    op.create_index("ix_question_feedback_daily_day", "question_feedback_daily", ["day"])
    op.create_index("ix_question_votes_created", "question_votes", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_question_votes_created", table_name="question_votes")
    op.drop_table("question_feedback_daily")
    op.drop_table("search_daily")
    op.drop_table("search_events")
    op.drop_table("audit_entries")
