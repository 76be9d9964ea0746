"""Learning from readers (issue 38, no Quart): from the org's own recorded searches
(``search_events``), *content gaps* (clusters of searches that found nothing, with counts and
examples: questions to write) and *suggested synonyms* (a search a reader reformulated before
opening an answer: the words that differ between the two are a group to add).

- A reformulation: a reader's search that opened nothing (``clicked_question_id`` null)
  followed, within ``REFORMULATION_SECONDS``, by the same reader's next search that did open
  a result. Its suggestion pairs the words only the first query says with the words only the
  second says (each 1 to ``MAX_SIDE_WORDS`` words), once it was seen ``MIN_EVIDENCE`` times,
  and not when the org's synonyms or the support lexicon already join the two.
- A content gap: queries that found nothing (and were not reformulated into an opened
  answer: those are vocabulary, not content), grouped when their folded words are alike
  (rapidfuzz ``token_set_ratio`` of at least ``CLUSTER_SIMILARITY``, each query joining the
  first, most searched, cluster it is like).

Bounded: the ``MAX_EVENTS`` most recent searches of the window are examined (the ``at``
index, then a window function over those rows), at most ``MAX_QUERIES`` distinct unanswered
queries are clustered, in a thread. Nothing is applied: an admin accepts a suggestion
(``accept``), which replaces the locale's synonym groups with one more through
``api.answers.synonyms.put_synonyms`` (capped by the plan, audited).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from api.analytics.service import Window
from api.answers import synonyms
from api.answers.terms import SynonymIndex, stemmer_for, words_of
from api.errors import NotFound
from tenancy.principal import Principal

MAX_EVENTS = 100_000  # most recent searches of the window examined
MAX_QUERIES = 1_000  # distinct unanswered queries clustered
MAX_PAIRS = 5_000  # distinct reformulations read
REFORMULATION_SECONDS = 10 * 60
MIN_EVIDENCE = 2  # reformulations seen before a suggestion is made
MAX_SIDE_WORDS = 3
CLUSTER_SIMILARITY = 80.0
EXAMPLES = 5
DEFAULT_LIMIT = 20


class SuggestionNotFound(NotFound):
    code = "suggestion_not_found"
    message = "No such synonym suggestion in this window (the searches may have changed)."


_EVENTS = """
WITH recent AS (
    SELECT locale, query, results, clicked_question_id, visitor, at
    FROM search_events
    WHERE at >= :start AND at < :end {locale}
    ORDER BY at DESC
    LIMIT :max_events
), s AS (
    SELECT locale, query, results, clicked_question_id, visitor, at,
           lead(query) OVER w AS next_query, lead(at) OVER w AS next_at,
           lead(clicked_question_id) OVER w AS next_clicked, lead(locale) OVER w AS next_locale
    FROM recent
    WINDOW w AS (PARTITION BY visitor ORDER BY at)
)
SELECT locale, query, results, next_query, next_clicked,
       (clicked_question_id IS NULL AND next_clicked IS NOT NULL AND next_locale = locale
        AND next_query <> query
        AND next_at - at <= make_interval(secs => :seconds)) AS reformulated
FROM s
"""


@dataclass
class _Suggestion:
    locale: str
    members: tuple[str, str]
    searches: int = 0
    readers: set[str] = field(default_factory=set)
    examples: Counter[tuple[str, str]] = field(default_factory=Counter)
    opened: Counter[str] = field(default_factory=Counter)


def suggestion_id(locale: str, members: tuple[str, ...]) -> str:
    """Stable while the evidence lasts: the same locale and members give the same id."""
    digest = hashlib.sha256("\x00".join([locale, *sorted(members)]).encode()).hexdigest()
    return f"syn_{digest[:24]}"


def _sides(first: str, second: str) -> tuple[str, str] | None:
    a, b = words_of(first), words_of(second)
    only_a = [w for w in a if w not in b]
    only_b = [w for w in b if w not in a]
    if not only_a or not only_b or len(only_a) > MAX_SIDE_WORDS or len(only_b) > MAX_SIDE_WORDS:
        return None
    return " ".join(only_a), " ".join(only_b)


def _joined(index: SynonymIndex, members: tuple[str, str]) -> bool:
    """Whether a group of ``index`` already holds both members (folded)."""
    return any(members[0] in group and members[1] in group for group in index.groups)


def cluster(queries: list[tuple[str, int]], locale: str) -> list[list[tuple[str, int]]]:
    """Queries (most searched first) in clusters of alike ones (their folded words stemmed in
    ``locale``'s language): each joins the first cluster whose leading query it is like, else
    leads a new one."""
    stemmer = stemmer_for(locale)
    clusters: list[list[tuple[str, int]]] = []
    leaders: list[str] = []
    for query, count in queries:
        words = words_of(query)
        if stemmer is not None:
            words = stemmer.stemWords(words)
        folded = " ".join(words) or query
        for n, leader in enumerate(leaders):
            if fuzz.token_set_ratio(folded, leader) >= CLUSTER_SIMILARITY:
                clusters[n].append((query, count))
                break
        else:
            leaders.append(folded)
            clusters.append([(query, count)])
    return clusters


async def gaps_report(
    session: AsyncSession, span: Window, *, locale: str | None, limit: int = DEFAULT_LIMIT
) -> dict[str, Any]:
    """The window's content gaps and suggested synonyms, most searched first, at most
    ``limit`` of each."""
    where = "AND locale = :locale" if locale is not None else ""
    params = {
        **span.bounds(),
        "locale": locale,
        "max_events": MAX_EVENTS,
        "seconds": REFORMULATION_SECONDS,
    }
    rows = (await session.execute(text(_EVENTS.format(locale=where)), params)).all()
    unanswered: Counter[tuple[str, str]] = Counter()
    reformulated: set[tuple[str, str]] = set()
    found: dict[tuple[str, tuple[str, str]], _Suggestion] = {}
    for row in rows:
        if row.results == 0:
            unanswered[(row.locale, row.query)] += 1
        if not row.reformulated:
            continue
        reformulated.add((row.locale, row.query))
        sides = _sides(row.query, row.next_query)
        if sides is None:
            continue
        item = found.setdefault((row.locale, sides), _Suggestion(row.locale, sides))
        item.searches += 1
        item.examples[(row.query, row.next_query)] += 1
        item.opened[row.next_clicked] += 1
    suggestions = []
    for item in found.values():
        if item.searches < MIN_EVIDENCE:
            continue
        index = await synonyms.index_for(session, item.locale)
        if _joined(index, item.members):
            continue
        suggestions.append(item)
    suggestions.sort(key=lambda s: (-s.searches, s.locale, s.members))
    by_locale: dict[str, list[tuple[str, int]]] = defaultdict(list)
    ordered = sorted(
        ((k, n) for k, n in unanswered.items() if k not in reformulated),
        key=lambda kn: (-kn[1], len(kn[0][1]), kn[0]),  # the most searched, then shortest
    )[:MAX_QUERIES]
    for (query_locale, query), n in ordered:
        by_locale[query_locale].append((query, n))
    clustered = await asyncio.to_thread(
        lambda: [(lc, c) for lc, qs in sorted(by_locale.items()) for c in cluster(qs, lc)]
    )
    gaps: list[dict[str, Any]] = [
        {
            "locale": lc,
            "query": c[0][0],
            "searches": sum(n for _, n in c),
            "queries": len(c),
            "examples": [{"query": q, "searches": n} for q, n in c[:EXAMPLES]],
        }
        for lc, c in clustered
    ]
    gaps.sort(key=lambda g: (-int(g["searches"]), str(g["locale"]), str(g["query"])))
    return {
        "since": span.since.isoformat(),
        "until": span.until.isoformat(),
        "searchesExamined": len(rows),
        "contentGaps": gaps[:limit],
        "suggestedSynonyms": [_public(s) for s in suggestions[:limit]],
    }


def _public(item: _Suggestion) -> dict[str, Any]:
    return {
        "id": suggestion_id(item.locale, item.members),
        "locale": item.locale,
        "members": list(item.members),
        "searches": item.searches,
        "examples": [
            {"query": a, "reformulatedAs": b, "searches": n}
            for (a, b), n in item.examples.most_common(EXAMPLES)
        ],
        "openedQuestionId": item.opened.most_common(1)[0][0],
    }


async def accept(
    session: AsyncSession, org: Principal, span: Window, suggestion: str
) -> dict[str, Any]:
    """Add the suggestion ``suggestion`` of ``span`` as a synonym group of its locale (the
    org's groups plus this one, through ``put_synonyms``: validated, capped, audited); 404
    ``suggestion_not_found`` when the window has no such suggestion."""
    report = await gaps_report(session, span, locale=None, limit=MAX_PAIRS)
    chosen = next((s for s in report["suggestedSynonyms"] if s["id"] == suggestion), None)
    if chosen is None:
        raise SuggestionNotFound()
    current = await synonyms.get_synonyms(session, org, chosen["locale"])
    groups = [*current["groups"], chosen["members"]]
    return {
        "suggestion": chosen,
        "synonyms": await synonyms.put_synonyms(session, org, chosen["locale"], groups),
    }
