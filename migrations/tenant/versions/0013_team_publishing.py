"""Team publishing (issue 30): members, drafts of questions with their review, and the
org's workflow setting (``requireReview``).

Members live in the org's schema: they are the org's data like its questions (moved with the
org's schema when sharded, gone with it), and their ids appear in that schema's audit rows.

Revision ID: 0013
Revises: 0012
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "members",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("deactivated_at", TS),
    )
    # One active member per address (case-insensitive); a deactivated one frees it.
    op.create_index(
        "uq_members_email_active",
        "members",
        [sa.text("lower(email)")],
        unique=True,
        postgresql_where=sa.text("deactivated_at IS NULL"),
    )
    op.create_table(
        "question_drafts",
        sa.Column(
            "question_id",
            sa.String(40),
            sa.ForeignKey("questions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        # The fields the draft changes, by their public names (title, answer, categoryId,
        # slug, order).
        sa.Column("changes", pg.JSONB, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        # The question's revision count when the draft was started: a later change of the
        # question is a conflict at publish.
        sa.Column("base_revision", sa.Integer, nullable=False),
        sa.Column("updated_by", pg.JSONB, nullable=False),
        # Who last changed the content: a member id, else the key's fingerprint.
        sa.Column("author", sa.String(64), nullable=False),
        sa.Column("review_state", sa.String(12)),
        sa.Column("reviewer_ids", pg.JSONB, nullable=False, server_default="[]"),
        sa.Column("decided_by", pg.JSONB),
        sa.Column("decision_comment", sa.Text),
        # The version an approval is of: any change makes it stale.
        sa.Column("approved_version", sa.Integer),
        sa.Column("scheduled_publish_at", TS),
        sa.Column("force", sa.Boolean, nullable=False, server_default="false"),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index(
        "ix_question_drafts_review_state",
        "question_drafts",
        ["review_state", "updated_at"],
        postgresql_where=sa.text("review_state IS NOT NULL"),
    )
    op.create_index(
        "ix_question_drafts_scheduled_publish_at",
        "question_drafts",
        ["scheduled_publish_at"],
        postgresql_where=sa.text("scheduled_publish_at IS NOT NULL"),
    )
    op.create_table(
        "workflow_settings",
        sa.Column("id", sa.Boolean, primary_key=True, server_default="true"),
        sa.Column("require_review", sa.Boolean, nullable=False, server_default="false"),
        sa.Column("updated_at", TS, nullable=False),
        sa.CheckConstraint("id", name="ck_workflow_settings_one_row"),
    )


def downgrade() -> None:
    op.drop_table("workflow_settings")
    op.drop_table("question_drafts")
    op.drop_index("uq_members_email_active", "members")
    op.drop_table("members")
