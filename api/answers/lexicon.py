"""The support lexicon (issue 38): groups of the paraphrases support questions use ("can't log
in" for "I can't sign in to my account", "pricing" for "Plans and prices"), per language,
applied to every org's searches like its own synonyms (``api.answers.synonyms.index_for``),
on by default. An org switches a group off per locale (``PUT /synonyms/lexicon``).

Written for this service by its authors from the wording of support questions and help-center
titles (no third-party word list: the licence is the service's own); the words are in
``api.answers.lexicon_words``. ``docs/answers.md`` says
how to extend it: a group is an id (stable: orgs switch groups off by it) and, per language,
members as readers type them. A member matches a query as a phrase of folded words
(``terms.matched_synonyms``), so inflected forms a reader types are listed (``coworker``,
``coworkers``); a member of several words should name the words that differ between members
(``delete my account`` / ``close my account``: the shared ``account`` stays a concept of its
own, ``terms.analyse``).

``IGNORED``: the words of a support question that say there is a problem or ask for help, not
what it is about ("cannot", "problem", "help", French "comment faire"): dropped from the
lexical concepts of a query that names something else (they stay in the text that is
embedded). Switched off by its id like a group.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from api.answers.lexicon_words import GROUPS as _GROUPS
from api.answers.lexicon_words import IGNORED_WORDS as _IGNORED

IGNORED = "problem-words"


@dataclass(frozen=True)
class LexiconGroup:
    id: str
    members: tuple[str, ...]


LANGUAGES = ("ar", "de", "en", "es", "fr")


def language_of(locale: str) -> str:
    return locale.split("-")[0].lower()


def group_ids() -> tuple[str, ...]:
    """Every group's id (``IGNORED`` included), in the lexicon's order."""
    return (*_GROUPS, IGNORED)


@lru_cache(maxsize=64)
def groups_for(locale: str) -> tuple[LexiconGroup, ...]:
    """The lexicon's groups in ``locale``'s language (none for a language it lacks), the
    ``IGNORED`` words last."""
    language = language_of(locale)
    out = [LexiconGroup(gid, by[language]) for gid, by in _GROUPS.items() if language in by]
    if language in _IGNORED:
        out.append(LexiconGroup(IGNORED, _IGNORED[language]))
    return tuple(out)


def ids_for(locale: str) -> frozenset[str]:
    return frozenset(group.id for group in groups_for(locale))
