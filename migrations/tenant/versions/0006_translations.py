"""Translations: the language of each question's and category's own fields (``locale``), and
one translation per resource and locale.

A translation keeps ``source_digest``, the md5 of its resource's translatable source fields
when the translation was last written; it is outdated while that differs from the digest of
the current source, whatever changed the source (PATCH, restore, anything else).

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Existing content is in the default locale every existing org starts with.
    op.add_column(
        "questions", sa.Column("locale", sa.String(35), nullable=False, server_default="en")
    )
    op.add_column(
        "categories", sa.Column("locale", sa.String(35), nullable=False, server_default="en")
    )
    op.create_table(
        "question_translations",
        sa.Column(
            "question_id",
            sa.String(40),
            sa.ForeignKey("questions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("locale", sa.String(35), primary_key=True),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("answer", sa.Text, nullable=False),
        sa.Column("status", sa.String(12), nullable=False, server_default="draft"),
        sa.Column("source_digest", sa.String(32), nullable=False),
        sa.Column("search_vector", pg.TSVECTOR, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index(
        "ix_question_translations_locale", "question_translations", ["locale", "question_id"]
    )
    op.create_index(
        "ix_question_translations_search_vector",
        "question_translations",
        ["search_vector"],
        postgresql_using="gin",
    )
    op.create_table(
        "category_translations",
        sa.Column(
            "category_id",
            sa.String(40),
            sa.ForeignKey("categories.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("locale", sa.String(35), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("source_digest", sa.String(32), nullable=False),
        sa.Column("search_vector", pg.TSVECTOR, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_index(
        "ix_category_translations_locale", "category_translations", ["locale", "category_id"]
    )


def downgrade() -> None:
    op.drop_table("category_translations")
    op.drop_table("question_translations")
    op.drop_column("categories", "locale")
    op.drop_column("questions", "locale")
