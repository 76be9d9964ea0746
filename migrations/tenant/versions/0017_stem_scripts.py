"""Stem the search index of content written in Arabic, Greek, Armenian or Tamil script before
issue 38.

Since issue 38 a word of those scripts is indexed with its Snowball stem taken in its own
script, then folded (``api/search.py``: ``SCRIPT_STEMMERS``, ``script_stems``), beside the
folded word; a query asks for the stem. Rows written before hold the folded words only: this
appends the stems (title/name weight A, answer/description weight B) to each row whose text
holds a letter of those scripts, in batches, reading and writing by primary key. A new
schema (created from the offline script) has no rows: nothing to do there. Appending is
idempotent for matching and ranking (the same lexemes again). Plain SQL updates by key: fine
on Citus (each org's tables live on one node).

Revision ID: 0017
Revises: 0016
"""

import re
from collections.abc import Sequence

import sqlalchemy as sa
import Stemmer
from alembic import context, op
from anyascii import anyascii

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# api/search.py SCRIPT_STEMMERS as of this revision (a migration must not import the app).
SCRIPTS = (
    ("\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff", "arabic"),
    ("\u0370-\u03ff\u1f00-\u1fff", "greek"),
    ("\u0530-\u058f", "armenian"),
    ("\u0b80-\u0bff", "tamil"),
)
_ANY = "[" + "".join(r for r, _ in SCRIPTS) + "]"
_PATTERNS = [(re.compile(f"[{r}]"), Stemmer.Stemmer(a)) for r, a in SCRIPTS]
_WORD = re.compile(r"[a-z0-9]+")
_RAW = re.compile(r"\w+")
BATCH = 500

TABLES = (
    # table, key columns, primary text (A), secondary text (B)
    ("questions", ("id",), "title", "answer"),
    ("question_translations", ("question_id", "locale"), "title", "answer"),
    ("categories", ("id",), "name", "description"),
    ("category_translations", ("category_id", "locale"), "name", "description"),
)


def _fold(text: str) -> str:
    return anyascii(text).lower()


def script_stems(text: str | None) -> str:
    """The folded stems ``api.search.script_stems`` gives ``text``, space-separated."""
    if not text or not re.search(_ANY, text):
        return ""
    out: list[str] = []
    for word in _RAW.findall(text):
        for pattern, stemmer in _PATTERNS:
            if pattern.search(word):
                own = set(_WORD.findall(_fold(word)))
                stems = _WORD.findall(_fold(stemmer.stemWord(word.lower())))
                out.extend(s for s in stems if s not in own)
                break
    return " ".join(out)


def upgrade() -> None:
    if context.is_offline_mode():
        return  # a new schema's script (rendered offline, once per process): no rows yet
    bind = op.get_bind()
    for table, keys, primary, secondary in TABLES:
        key_list = ", ".join(keys)
        after: tuple[str, ...] | None = None
        while True:
            where = f"({primary} ~ :script OR coalesce({secondary}, '') ~ :script)"
            params: dict[str, object] = {"script": _ANY, "limit": BATCH}
            if after is not None:
                where += f" AND ({key_list}) > ({', '.join(f':k{i}' for i in range(len(keys)))})"
                params.update({f"k{i}": v for i, v in enumerate(after)})
            rows = bind.execute(
                sa.text(
                    f"SELECT {key_list}, {primary} AS a, {secondary} AS b FROM {table}"
                    f" WHERE {where} ORDER BY {key_list} LIMIT :limit"
                ),
                params,
            ).all()
            if not rows:
                break
            for row in rows:
                a, b = script_stems(row.a), script_stems(row.b)
                if not a and not b:
                    continue
                match = " AND ".join(f"{k} = :{k}" for k in keys)
                bind.execute(
                    sa.text(
                        f"UPDATE {table} SET search_vector = search_vector"
                        " || setweight(to_tsvector('simple', :a), 'A')"
                        " || setweight(to_tsvector('simple', :b), 'B')"
                        f" WHERE {match}"
                    ),
                    {"a": a, "b": b, **{k: getattr(row, k) for k in keys}},
                )
            after = tuple(getattr(rows[-1], k) for k in keys)


def downgrade() -> None:
    pass  # the stems only add matches; the words stay
