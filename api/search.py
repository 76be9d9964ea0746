"""Full-text search that is case- and accent-insensitive, matches word prefixes and stems
words in the text's language.

Text is folded to ASCII in Python (``anyascii``) before PostgreSQL sees it, so no extension
(``unaccent``) is needed and the index stays IMMUTABLE-safe. A vector holds the text's words
as they are (``simple``: every word, stopwords included, so ``how`` finds "How do I …") and,
for a language PostgreSQL stems (``CONFIGS``), their stems too; a query in that language
matches each word by its prefix or by its stem's prefix (``tsquery``).
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer
from anyascii import anyascii
from sqlalchemy import ColumnElement, Text, cast, func, literal, literal_column

_WORD = re.compile(r"[a-z0-9]+")
MAX_TERMS = 16


def fold(text: str | None) -> str:
    return anyascii(text or "").lower()


SIMPLE: ColumnElement[str] = literal_column("'simple'::regconfig")

# Languages with a PostgreSQL text search configuration (``pg_ts_config``, every supported
# PostgreSQL version) whose text stays itself once folded to ASCII. Languages of other
# scripts are transliterated by the folding, which their stemmers would not understand: they,
# and every language not listed, use ``simple`` only.
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


def config_for(locale: str | None) -> str | None:
    """The stemming configuration of a locale's language (``fr-CA`` -> ``french``), or None."""
    if not locale:
        return None
    return CONFIGS.get(locale.split("-")[0].lower())


def _regconfig(name: str) -> ColumnElement[str]:
    assert name.isalpha()  # a name of CONFIGS, never user text
    return literal_column(f"'{name}'::regconfig")


# Scripts whose language has a Snowball stemmer but whose words folding transliterates (so a
# PostgreSQL configuration could not stem them once folded): each word of such a script is
# stemmed in its own script (PyStemmer), then folded, and its stem indexed beside the folded
# word (issue 38: "أموالي" and "الأموال" both hold "mwl"). Decided by the script, not the
# locale, so the index and a query agree whatever locale either is written or asked in; a
# script several languages share (Cyrillic, Devanagari) is left out: one stemmer would be
# wrong for the others.
SCRIPT_STEMMERS = (
    (re.compile(r"[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]"), "arabic"),
    (re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]"), "greek"),
    (re.compile(r"[\u0530-\u058f]"), "armenian"),
    (re.compile(r"[\u0b80-\u0bff]"), "tamil"),
)
RAW_WORD = re.compile(r"\w+", re.UNICODE)
_ANY_STEMMED_SCRIPT = re.compile("|".join(p.pattern for p, _ in SCRIPT_STEMMERS))


@lru_cache(maxsize=8)
def _script_stemmer(algorithm: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(algorithm)


def script_algorithm(word: str) -> str | None:
    """The Snowball algorithm of ``word``'s script (``SCRIPT_STEMMERS``), or None."""
    for pattern, algorithm in SCRIPT_STEMMERS:
        if pattern.search(word):
            return algorithm
    return None


def script_stem(word: str) -> list[str] | None:
    """The folded lexemes of the stem of ``word`` (a word as written, not folded) when its
    script is stemmed here (``SCRIPT_STEMMERS``); None otherwise."""
    algorithm = script_algorithm(word)
    if algorithm is None:
        return None
    return _WORD.findall(fold(_script_stemmer(algorithm).stemWord(word.lower())))


def script_stems(text: str | None) -> list[str]:
    """The folded stems of the words of ``text`` in a stemmed script that differ from the
    word's own folded lexemes (what ``searchable`` adds to the index)."""
    if not text or not _ANY_STEMMED_SCRIPT.search(text):
        return []
    out: list[str] = []
    for word in RAW_WORD.findall(text):
        stems = script_stem(word)
        if stems:
            own = set(_WORD.findall(fold(word)))
            out.extend(stem for stem in stems if stem not in own)
    return out


def searchable(text: str | None) -> str:
    """Only the words a query can name (``[a-z0-9]+`` after folding), so the parser's hosts,
    e-mails, versions and file names (``example.com``, ``2.0``) are indexed by their parts;
    then the stems of words in a script stemmed before folding (``script_stems``)."""
    words = _WORD.findall(fold(text))
    stems = script_stems(text)
    return " ".join([*words, *stems] if stems else words)


def _vector(
    text: str | None, weight: str, config: ColumnElement[str] = SIMPLE
) -> ColumnElement[str]:
    return _words_vector(cast(literal(searchable(text)), Text), weight, config)


def _words_vector(
    words: ColumnElement[str], weight: str, config: ColumnElement[str] = SIMPLE
) -> ColumnElement[str]:
    return func.setweight(func.to_tsvector(config, words), literal_column(f"'{weight}'"))


def text_vector_of(
    locale: str, primary: ColumnElement[str], secondary: ColumnElement[str]
) -> ColumnElement[str]:
    """``text_vector`` of words given as SQL (e.g. bound parameters, for a statement built
    once): pass ``searchable(text)`` of each text as its value."""
    vector = _words_vector(primary, "A").op("||")(_words_vector(secondary, "B"))
    name = config_for(locale)
    if name is None:
        return vector
    config = _regconfig(name)
    stems = _words_vector(primary, "A", config).op("||")(_words_vector(secondary, "B", config))
    return vector.op("||")(stems)


def weighted_vector(primary: str | None, secondary: str | None) -> ColumnElement[str]:
    """tsvector with ``primary`` text weighted A above ``secondary`` weighted B."""
    return _vector(primary, "A").op("||")(_vector(secondary, "B"))


def text_vector(locale: str, primary: str | None, secondary: str | None) -> ColumnElement[str]:
    """The search vector of text written in ``locale`` (questions, categories, translations
    all index through here): its words as they are (``weighted_vector``) and, for a language
    of ``CONFIGS``, their stems, with the same weights."""
    vector = weighted_vector(primary, secondary)
    name = config_for(locale)
    if name is None:
        return vector
    config = _regconfig(name)
    stems = _vector(primary, "A", config).op("||")(_vector(secondary, "B", config))
    return vector.op("||")(stems)


def _term(term: str, config: ColumnElement[str] | None) -> ColumnElement[str]:
    simple = func.to_tsquery(SIMPLE, cast(literal(term), Text))
    if config is None:
        return simple
    # A stopword of the language stems to nothing (an empty query): the word as it is decides.
    return simple.op("||")(func.to_tsquery(config, cast(literal(term), Text)))


def tsquery(query: str, locale: str | None = None) -> ColumnElement[str]:
    """The query of ``prefix_query`` (``a:* & b:*``; or ``a:*A | b:*A``), in ``locale``: each
    word matches by its prefix or, in a language of ``CONFIGS``, by its stem's prefix."""
    name = config_for(locale)
    if name is None:
        return func.to_tsquery(SIMPLE, cast(literal(query), Text))
    config = _regconfig(name)
    joiner, combine = (" | ", "||") if " | " in query else (" & ", "&&")
    terms = [_term(term, config) for term in query.split(joiner)]
    combined = terms[0]
    for term in terms[1:]:
        combined = combined.op(combine)(term)
    return combined


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
