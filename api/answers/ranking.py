"""How ``/answers`` orders and scores what its two legs found, and when it is confident.

Each candidate has up to two signals: ``semantic``, the cosine similarity of its embedding to
the query's (``api.answers.semantic_leg``: the mean of the models' that embed the reader's
language), and ``coverage``, the share of the query's lexical
weight it holds (the IDF of the query's concepts it matches over the IDF of all of them);
BM25 (``lexical``) only breaks ties of coverage. The score is a weighted sum of both on a
0..1 scale (``SEMANTIC_WEIGHT``), so it keeps its meaning from one query to the next; a
candidate below its leg's floor (``FLOORS``: ``MIN_SCORE``, or ``MULTILINGUAL_MIN_COSINE``
for a cosine of the multilingual model alone) is noise and is left out (no result at all
beats a wrong one).
A candidate without an embedding (not written yet, or a locale the embedder does not serve)
is scored by its coverage alone, against ``MIN_SCORE_LEXICAL_ONLY``.

``confident`` (the first result very probably answers the question) needs a score of at least
``Thresholds.score`` and a lead of ``Thresholds.margin`` over the second result, per language
of the reader's locale and per leg that scored the first result (``CONFIDENT``). They were
fitted on the dev split of each language's evaluation sets (``bench/answers``, ``python -m
bench.answers_calibration``) and are checked on the test split: ``docs/answers.md``
("``confident``") gives the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from api.answers.lexical import LexicalHit, idf
from api.answers.vocabulary import Vocabulary

SEMANTIC_WEIGHT = 0.7
# In a language only the multilingual model embeds, its cosine weighs less: alone it finds
# less than the words there (XQuAD-R Arabic dev: USE alone P@1 0.438, BM25 0.718). Fitted on
# the dev splits of XQuAD-R Arabic and Tatoeba French (P@1 of /answers at 0.3 / 0.45 / 0.55
# / 0.7: Arabic 0.861 / 0.866 / 0.849 / 0.798, French 0.982 at each).
MULTILINGUAL_WEIGHT = 0.45
MIN_SCORE = 0.25
MIN_SCORE_LEXICAL_ONLY = 0.3
# The multilingual model's cosines run low, across languages and in a language it embeds alone
# (XQuAD-R Arabic dev, in Arabic: a right entry's median cosine 0.30 where English's blend has
# 0.55): on the blind held-out set (``bench/answers/README.md``) 15 of 57 right first answers
# for French readers and 26 of 60 for Arabic ones had a cosine under 0.36, which ``MIN_SCORE``
# cut, so ``/answers`` found less than the model alone. Its floor is a cosine above the median
# cosine between a question and an unrelated entry on the dev splits of the cross-lingual
# sets (XQuAD-R Arabic 0.156, Tatoeba French 0.176): closer than half of what is unrelated
# (in Arabic itself, 0.156 is the 90th percentile of unrelated pairs). What passes it is shown,
# not vouched for: ``confident`` keeps its own thresholds. The English blend's unrelated pairs
# sit where WordLlama's alone did (StackFAQ dev: median 0.146 and 90th percentile 0.323,
# against 0.133 and 0.329), so ``MIN_SCORE`` stays.
MULTILINGUAL_MIN_COSINE = 0.17
TIE_BREAK = 0.001  # BM25 relative to the best candidate's, under coverage


@dataclass(frozen=True)
class Thresholds:
    score: float  # the first result's score, at least
    margin: float  # its lead over the second's, at least


SEMANTIC = "semantic"  # the first result has a cosine of the embedders' (blended)
MULTILINGUAL = "multilingual"  # of the multilingual one alone, in the reader's language
CROSS_LINGUAL = "cross-lingual"  # of the multilingual embedder (another language)
LEXICAL = "lexical"  # it is scored by its coverage alone

# The cosine's weight in the score, per leg that scored it (the coverage has the rest).
WEIGHTS = {
    SEMANTIC: SEMANTIC_WEIGHT,
    MULTILINGUAL: MULTILINGUAL_WEIGHT,
    CROSS_LINGUAL: SEMANTIC_WEIGHT,
    LEXICAL: 0.0,
}
# The score under which a candidate is noise and left out, per leg that scored it.
FLOORS = {
    SEMANTIC: MIN_SCORE,
    MULTILINGUAL: MULTILINGUAL_WEIGHT * MULTILINGUAL_MIN_COSINE,
    CROSS_LINGUAL: SEMANTIC_WEIGHT * MULTILINGUAL_MIN_COSINE,
    LEXICAL: MIN_SCORE_LEXICAL_ONLY,
}

# language -> leg -> thresholds, fitted on the dev split by ``python -m
# bench.answers_calibration``: the most answerable questions confident and right while >= 90%
# of confident answers are right (an unanswerable question answered confidently counts as
# wrong) and >= 50% of unanswerable questions stay not confident; a near tie (lead < 0.02) is
# never sure. Test split (precision / confident and right / unanswerable not confident):
# - en, semantic (StackFAQ + support, 530 + 137; session 17, both models blended): fitted
#   0.44/0.05: 89.9% / 74.2% / 81.8% (the 0.47/0.04 fitted on WordLlama alone: 88.3% / 72.8% /
#   78.8%). en, lexical: no set without vectors; kept.
# - ar, multilingual (XQuAD-R Arabic org, 365 + 88; the multilingual model alone, session 17):
#   0.42/0.04: 87.7% / 76.2% / 73.9%. fr, multilingual (Tatoeba, French translations, typo
#   variants, 52 + 9): 0.44/0.02: 94.3% / 96.2% / 66.7%; a small set, docs/answers.md says
#   what it is worth.
# - ar, lexical and fr, lexical (a question whose multilingual vector is not written yet),
#   fitted when that was the leg of every Arabic and French answer: ar 88.4% / 69.0% / 75.0%,
#   fr 95.7% / 84.6% / 77.8%.
# - ar, cross-lingual (XQuAD-R Arabic questions, the English org, 365 + 88): 85.1% / 11.0% /
#   95.5% (89.5% / 9.3% / 96.6% in session 17's run). fr, cross-lingual (Tatoeba French
#   questions, the English org, 52 + 9): 90.7% / 75.0% / 88.9%.
# A language or leg without data takes English's; English has no cross-lingual or
# multilingual set, so such a first item of another language takes English's lexical
# thresholds (0.7), i.e. it is rarely confident.
CONFIDENT: dict[str, dict[str, Thresholds]] = {
    "en": {SEMANTIC: Thresholds(0.44, 0.05), LEXICAL: Thresholds(0.7, 0.1)},
    "ar": {
        MULTILINGUAL: Thresholds(0.42, 0.04),
        LEXICAL: Thresholds(0.48, 0.11),
        CROSS_LINGUAL: Thresholds(0.31, 0.11),
    },
    "fr": {
        MULTILINGUAL: Thresholds(0.44, 0.02),
        LEXICAL: Thresholds(0.48, 0.20),
        CROSS_LINGUAL: Thresholds(0.40, 0.02),
    },
}


@dataclass(frozen=True)
class Ranked:
    question_id: str
    score: float
    semantic: float | None  # its cosine to the query, of whichever leg scored it
    coverage: float
    leg: str = "lexical"  # SEMANTIC, MULTILINGUAL, CROSS_LINGUAL or LEXICAL: what scored it


def concept_weights(
    concepts: Sequence[Sequence[str]], vocabulary: Vocabulary
) -> list[tuple[float, frozenset[str]]]:
    """Each of the query's concepts (a synonym group is one concept: any of its members
    matches it) with its weight, the mean IDF of its alternatives: once per query."""
    return [(sum(idf(lx, vocabulary) for lx in c) / len(c), frozenset(c)) for c in concepts if c]


def coverage(hit: LexicalHit, weighted: Sequence[tuple[float, frozenset[str]]]) -> float:
    """The share of the query's concept weight (``concept_weights``) the question holds."""
    total = sum(w for w, _ in weighted)
    if total <= 0:
        return 0.0
    return (
        sum(w for w, alternatives in weighted if not alternatives.isdisjoint(hit.matched)) / total
    )


def rank(
    lexical: Sequence[LexicalHit],
    semantic: dict[str, float] | None,
    concepts: Sequence[Sequence[str]],
    vocabulary: Vocabulary,
    cross_lingual: dict[str, float] | None = None,
    semantic_leg: str = SEMANTIC,
) -> list[Ranked]:
    """Candidates of every leg, best first, without noise. ``semantic``: the cosine of every
    candidate that has an embedding (None: no semantic leg at all), of ``semantic_leg``
    (SEMANTIC, or MULTILINGUAL in a language only that model embeds); ``cross_lingual``: the
    multilingual cosine of candidates in another language than the reader's with no
    translation in the reader's locale (``api.answers.cross_lingual``), blended as a cosine
    is, for those the semantic leg did not score."""
    best = max((hit.score for hit in lexical), default=0.0) or 1.0
    weighted = concept_weights(concepts, vocabulary)
    covered = {
        hit.question_id: coverage(hit, weighted) + TIE_BREAK * hit.score / best for hit in lexical
    }
    similarities = semantic or {}
    across = cross_lingual or {}
    ranked: list[Ranked] = []
    uncapped: dict[str, float] = {}
    for question_id in set(covered) | set(similarities) | set(across):
        cover = covered.get(question_id, 0.0)
        cosine = similarities.get(question_id)
        leg = semantic_leg
        if cosine is None and question_id in across:
            cosine, leg = across[question_id], CROSS_LINGUAL
        if cosine is None:
            score, leg = cover, LEXICAL
        else:
            weight = WEIGHTS[leg]
            score = weight * max(0.0, cosine) + (1 - weight) * cover
        if score >= FLOORS[leg]:
            ranked.append(Ranked(question_id, min(1.0, score), cosine, cover, leg))
            uncapped[question_id] = score
    # By the score before its cap at 1: two full covers stay ordered by their BM25 tie-break.
    ranked.sort(key=lambda r: (-uncapped[r.question_id], r.question_id))
    return ranked


def thresholds_for(locale: str, leg: str) -> Thresholds:
    """The thresholds of ``confident`` for a reader in ``locale`` (a BCP 47 tag: its primary
    language decides) whose first result was scored by ``leg``."""
    english = CONFIDENT["en"]
    table = CONFIDENT.get(locale.split("-")[0].lower(), english)
    return table.get(leg) or english.get(leg) or english[LEXICAL]


def confident(ranked: Sequence[Ranked], locale: str = "en") -> bool:
    """Whether the first of ``ranked`` very probably answers a reader in ``locale``."""
    if not ranked:
        return False
    first = ranked[0]
    needed = thresholds_for(locale, first.leg)
    second = ranked[1].score if len(ranked) > 1 else 0.0
    return first.score >= needed.score and first.score - second >= needed.margin
