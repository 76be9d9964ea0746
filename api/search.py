"""Full-text search that is case- and accent-insensitive and matches word prefixes.

Text is folded to ASCII in Python (``anyascii``) before PostgreSQL's ``simple`` configuration
sees it, so no extension (``unaccent``) is needed and the index stays IMMUTABLE-safe.
"""

from __future__ import annotations

import re

from anyascii import anyascii
from sqlalchemy import ColumnElement, Text, cast, func, literal, literal_column

_WORD = re.compile(r"[a-z0-9]+")
MAX_TERMS = 16


def fold(text: str | None) -> str:
    return anyascii(text or "").lower()


SIMPLE: ColumnElement[str] = literal_column("'simple'::regconfig")


def searchable(text: str | None) -> str:
    """Only the words a query can name (``[a-z0-9]+`` after folding), so the parser's hosts,
    e-mails, versions and file names (``example.com``, ``2.0``) are indexed by their parts."""
    return " ".join(_WORD.findall(fold(text)))


def _vector(text: str | None, weight: str) -> ColumnElement[str]:
    return func.setweight(
        func.to_tsvector(SIMPLE, cast(literal(searchable(text)), Text)),
        literal_column(f"'{weight}'"),
    )


def weighted_vector(primary: str | None, secondary: str | None) -> ColumnElement[str]:
    """tsvector with ``primary`` text weighted A above ``secondary`` weighted B."""
    return _vector(primary, "A").op("||")(_vector(secondary, "B"))


def text_vector(locale: str, primary: str | None, secondary: str | None) -> ColumnElement[str]:
    """The search vector of text written in ``locale`` (questions, categories, translations
    all index through here; the language-aware configuration is chosen from ``locale``)."""
    del locale  # every language is indexed with ``simple`` until stemming per language lands
    return weighted_vector(primary, secondary)


def tsquery(query: str) -> ColumnElement[str]:
    return func.to_tsquery(SIMPLE, cast(literal(query), Text))


def unranked(q: str) -> bool:
    """True when every word of ``q`` is one letter (or digit): such a prefix matches nearly
    everything, so ranking every match would cost a scan and a sort of the whole org; those
    matches are listed unranked, in the list's order (the search-cost bound)."""
    words = _WORD.findall(fold(q))[:MAX_TERMS]
    return bool(words) and all(len(w) == 1 for w in words)


def prefix_query(q: str) -> str | None:
    """``pass word`` -> ``pass:* & word:*``; None when no searchable word is left."""
    words = _WORD.findall(fold(q))[:MAX_TERMS]
    if not words:
        return None
    return " & ".join(f"{w}:*" for w in words)
