"""How ``/answers`` orders and scores what its two legs found, and when it is confident.

Each candidate has up to two signals: ``semantic``, the cosine similarity of its embedding to
the query's (``api.answers.vectors``), and ``coverage``, the share of the query's lexical
weight it holds (the IDF of the query's concepts it matches over the IDF of all of them);
BM25 (``lexical``) only breaks ties of coverage. The score is a weighted sum of both on a
0..1 scale (``SEMANTIC_WEIGHT``), so it keeps its meaning from one query to the next; a
candidate below ``MIN_SCORE`` is noise and is left out (no result at all beats a wrong one).
A candidate without an embedding (not written yet, or a locale the embedder does not serve)
is scored by its coverage alone, against ``MIN_SCORE_LEXICAL_ONLY``.

``confident`` (the first result very probably answers the question) needs a score of at least
``CONFIDENT_SCORE`` and a lead of ``CONFIDENT_MARGIN`` over the second result. The constants
were fitted on the dev half of the evaluation set (``bench/answers``) and are checked on its
other half: ``docs/answers.md`` gives the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from api.answers.lexical import LexicalHit, idf
from api.answers.vocabulary import Vocabulary

SEMANTIC_WEIGHT = 0.7
MIN_SCORE = 0.25
MIN_SCORE_LEXICAL_ONLY = 0.3
TIE_BREAK = 0.001  # BM25 relative to the best candidate's, under coverage
CONFIDENT_SCORE = 0.47
CONFIDENT_MARGIN = 0.04
CONFIDENT_SCORE_LEXICAL_ONLY = 0.7
CONFIDENT_MARGIN_LEXICAL_ONLY = 0.1


@dataclass(frozen=True)
class Ranked:
    question_id: str
    score: float
    semantic: float | None
    coverage: float


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
) -> list[Ranked]:
    """Candidates of both legs, best first, without noise. ``semantic``: the cosine of every
    candidate that has an embedding (None: no semantic leg at all)."""
    best = max((hit.score for hit in lexical), default=0.0) or 1.0
    weighted = concept_weights(concepts, vocabulary)
    covered = {
        hit.question_id: coverage(hit, weighted) + TIE_BREAK * hit.score / best for hit in lexical
    }
    similarities = semantic or {}
    ranked: list[Ranked] = []
    uncapped: dict[str, float] = {}
    for question_id in set(covered) | set(similarities):
        cover = covered.get(question_id, 0.0)
        cosine = similarities.get(question_id)
        if cosine is None:
            score, floor = cover, MIN_SCORE_LEXICAL_ONLY
        else:
            score = SEMANTIC_WEIGHT * max(0.0, cosine) + (1 - SEMANTIC_WEIGHT) * cover
            floor = MIN_SCORE
        if score >= floor:
            ranked.append(Ranked(question_id, min(1.0, score), cosine, cover))
            uncapped[question_id] = score
    # By the score before its cap at 1: two full covers stay ordered by their BM25 tie-break.
    ranked.sort(key=lambda r: (-uncapped[r.question_id], r.question_id))
    return ranked


def confident(ranked: Sequence[Ranked]) -> bool:
    if not ranked:
        return False
    first = ranked[0]
    lexical_only = first.semantic is None
    needed = CONFIDENT_SCORE_LEXICAL_ONLY if lexical_only else CONFIDENT_SCORE
    margin = CONFIDENT_MARGIN_LEXICAL_ONLY if lexical_only else CONFIDENT_MARGIN
    second = ranked[1].score if len(ranked) > 1 else 0.0
    return first.score >= needed and first.score - second >= margin
