"""The lexical leg of ``/answers``: questions that share words with the query, scored by BM25.

Any word may match (``OR``), unlike the list's search where every word must. PostgreSQL finds
the questions holding the query's lexemes through the search indexes and keeps the
``CANDIDATES`` best by ``ts_rank``; BM25 (Robertson's, k1 1.2, b 0.75) then scores them in
Python, with the org's document frequencies (``vocabulary``) and each lexeme's count in the
title (weight A, counted ``TITLE_BOOST`` times) and the answer (weight B).

The search is bounded: only the rarest lexemes whose questions add up to at most
``MATCH_BUDGET`` select candidates (a lexeme in every other question, like a stopword, would
make PostgreSQL rank half the org); when even the rarest is in more questions than that, the
candidates are the questions holding all the query's lexemes (an intersection of the index's
lists: few). Every lexeme still counts in the score. The semantic leg's nearest questions
(``also``) are scored the same way, wherever their lexical rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from sqlalchemy.ext.asyncio import AsyncSession

from api.answers.vocabulary import Vocabulary
from api.audiences.visibility import Audiences, question_rule_sql
from tenancy.db import read_records

CANDIDATES = 100
MATCH_BUDGET = 2_000
TITLE_BOOST = 3
K1 = 1.2
B = 0.75

# $1 tsquery, $2 locale, $3 category ids or NULL, $4 limit, $5 lexemes, $6 more ids to score.
# The served vector: the published translation's in the locale, else the question's own.
# ``{rule}``: who may read the question (issue 39, ``api.audiences.visibility``).
_CANDIDATES_SQL = """
WITH hits AS (
    SELECT id FROM questions WHERE search_vector @@ $1::tsquery
    UNION
    SELECT question_id FROM question_translations
    WHERE locale = $2 AND status = 'published' AND search_vector @@ $1::tsquery
), served AS (
    SELECT q.id, coalesce(t.search_vector, q.search_vector) AS v
    FROM hits
    JOIN questions q ON q.id = hits.id
    LEFT JOIN question_translations t
        ON t.question_id = q.id AND t.locale = $2 AND t.status = 'published'
    WHERE q.deleted_at IS NULL AND q.status = 'published'{rule}
        AND ($3::text[] IS NULL OR q.category_id = ANY($3::text[]))
), ranked AS (
    (SELECT id, v FROM served WHERE v @@ $1::tsquery
     ORDER BY ts_rank(v, $1::tsquery, 1) DESC, id
     LIMIT $4)
    UNION
    SELECT q.id, coalesce(t.search_vector, q.search_vector)
    FROM questions q
    LEFT JOIN question_translations t
        ON t.question_id = q.id AND t.locale = $2 AND t.status = 'published'
    WHERE q.id = ANY($6::text[]) AND q.deleted_at IS NULL AND q.status = 'published'{rule}
)
SELECT r.id, length(r.v) AS dl, u.lexeme, u.weights
FROM ranked r CROSS JOIN LATERAL unnest(r.v) AS u
WHERE u.lexeme = ANY($5::text[])
"""


@lru_cache(maxsize=256)
def candidates_sql(audiences: Audiences) -> str:
    """The candidates' statement for readers of ``audiences`` (None: no audience rule)."""
    rule = question_rule_sql(audiences, "q")
    return _CANDIDATES_SQL.replace("{rule}", f" AND {rule}" if rule is not None else "")


@dataclass(frozen=True)
class LexicalHit:
    question_id: str
    score: float  # BM25, unbounded
    matched: frozenset[str]  # the query's lexemes the question holds


def candidates_query(lexemes: Sequence[str], vocabulary: Vocabulary) -> str:
    """The tsquery that selects candidates: the rarest lexemes OR-ed while their document
    frequencies add up to at most MATCH_BUDGET, else all of them AND-ed."""
    ordered = sorted(lexemes, key=lambda lexeme: vocabulary.frequencies.get(lexeme, 1))
    chosen: list[str] = []
    total = 0
    for lexeme in ordered:
        total += vocabulary.frequencies.get(lexeme, 1)
        if total > MATCH_BUDGET:
            break
        chosen.append(lexeme)
    # [a-z0-9]+ only: no quoting needed.
    if chosen:
        return " | ".join(f"'{lexeme}'" for lexeme in chosen)
    return " & ".join(f"'{lexeme}'" for lexeme in ordered)


def idf(lexeme: str, vocabulary: Vocabulary) -> float:
    df = vocabulary.frequencies.get(lexeme, 1)
    n = max(vocabulary.documents, df)
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


async def search(
    session: AsyncSession,
    lexemes: Sequence[str],
    *,
    locale: str,
    vocabulary: Vocabulary,
    category_ids: Sequence[str] | None,
    also: Sequence[str] = (),
    audiences: Audiences = (),
) -> list[LexicalHit]:
    """The candidates (and the questions ``also``, those holding a lexeme), best BM25 first;
    only questions readers of ``audiences`` may read (None: every published one)."""
    if not lexemes:
        return []
    rows = await read_records(
        session,
        candidates_sql(audiences),
        candidates_query(lexemes, vocabulary),
        locale,
        list(category_ids) if category_ids is not None else None,
        CANDIDATES,
        list(lexemes),
        list(also),
    )
    counts: dict[str, dict[str, float]] = {}
    lengths: dict[str, int] = {}
    for row in rows:
        weights: Sequence[str] = row["weights"]
        tf = sum(TITLE_BOOST if weight == "A" else 1 for weight in weights)
        counts.setdefault(row["id"], {})[row["lexeme"]] = float(tf)
        lengths[row["id"]] = int(row["dl"])
    mean = vocabulary.mean_length or 1.0
    idfs = {lexeme: idf(lexeme, vocabulary) for lexeme in lexemes}
    hits = []
    for question_id, tfs in counts.items():
        norm = K1 * (1 - B + B * lengths[question_id] / mean)
        score = sum(idfs[lx] * tf * (K1 + 1) / (tf + norm) for lx, tf in tfs.items())
        hits.append(LexicalHit(question_id, score, frozenset(tfs)))
    hits.sort(key=lambda hit: (-hit.score, hit.question_id))
    return hits
