"""Stem the search index of content written before stemming per language existed.

Questions, categories and their translations written since issue 15 are indexed with their
words as written (``simple``) and, in a language PostgreSQL stems, their stems
(``api/search.py: text_vector``). Rows written before hold the words only: this appends the
stems of those words, per weight (title/name A, answer/description B), in the row's language.
The words are the folded ones the vector already holds, so no Python folding is needed; a row
that already holds stems gets the same lexemes again (a no-op for matching and ranking).

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# api/search.py CONFIGS as of this revision (a migration must not import the app).
CONFIGS = {
    "ca": "catalan",
    "da": "danish",
    "de": "german",
    "en": "english",
    "es": "spanish",
    "eu": "basque",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hu": "hungarian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nb": "norwegian",
    "nl": "dutch",
    "nn": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "sv": "swedish",
    "tr": "turkish",
}


def _words(weight: str) -> str:
    return (
        "coalesce((SELECT string_agg(u.lexeme, ' ') FROM unnest(t.search_vector) u "
        f"WHERE '{weight}' = ANY(u.weights)), '')"
    )


def upgrade() -> None:
    configs = ", ".join(f"('{lang}', '{cfg}'::regconfig)" for lang, cfg in CONFIGS.items())
    for table in ("questions", "categories"):
        op.execute(
            f"UPDATE {table} AS t SET search_vector = t.search_vector"
            f" || setweight(to_tsvector(c.cfg, {_words('A')}), 'A')"
            f" || setweight(to_tsvector(c.cfg, {_words('B')}), 'B')"
            f" FROM (VALUES {configs}) AS c(lang, cfg)"
            " WHERE c.lang = split_part(lower(t.locale), '-', 1)"
        )


def downgrade() -> None:
    pass  # the stems only add matches; the words stay
