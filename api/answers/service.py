"""``/answers``: the published questions that best answer a reader's question, with snippets.

One call: the query's terms (``terms.analyse``: stopwords out, typos corrected against the
org's vocabulary, synonyms added), the lexical leg (``lexical.search``, BM25) and the semantic
leg (the query's embedding against the questions', ``api.answers.vectors``) when an embedder
and pgvector are there, fused and filtered (``ranking``), then each result's question as GET
serves it in the locale, with its snippet (``snippets``).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from api.answers import lexical, ranking, snippets, synonyms, vocabulary
from api.answers.cross_lingual import CrossLingualLeg
from api.answers.multilingual import language_of, serves_several_languages
from api.answers.semantic_leg import EmbeddingsLeg
from api.answers.terms import NO_SYNONYMS, QueryTerms, analyse, matched_synonyms
from api.answers.vocabulary import Vocabulary, VocabularyCache
from api.audiences.visibility import (
    Audiences,
    category_rule_sql,
    question_visible,
    reader_audiences,
)
from api.errors import CategoryNotFound, ValidationFailed, field_error
from api.questions import queries
from api.questions.models import Question
from api.questions.read_drafts import question_read
from api.search import RAW_WORD, config_for, fold
from tenancy.db import org_path, read_records, read_rows, sibling_session
from tenancy.ids import looks_like_id
from tenancy.principal import Principal

MAX_LIMIT = 20


class Semantic(Protocol):
    """The semantic leg (``api.answers.semantic_leg``)."""

    def start(self, typed: str) -> None:
        """Start embedding the query as typed (of the models that read it so)."""
        ...

    async def nearest(
        self, text: str, category_ids: Sequence[str] | None, sentence: str
    ) -> dict[str, float] | None:
        """{question id: cosine} of the questions nearest ``text`` (the analysed query) or
        ``sentence`` (as typed, typos corrected: for a model that reads sentences whole); None
        when there are no embeddings here (no pgvector, or a locale no embedder serves)."""
        ...

    async def cosines(self, ids: Sequence[str]) -> dict[str, float]:
        """The cosine of every candidate that has an embedding: ``ids`` and those ``nearest``
        found (after it)."""
        ...

    @property
    def leg(self) -> str:
        """What scores its cosines (``ranking.SEMANTIC`` or ``ranking.MULTILINGUAL``)."""
        ...


class CrossLingual(Protocol):
    """The cross-lingual leg (``api.answers.cross_lingual``)."""

    def start(self, text: str) -> None:
        """Embed the query (as typed) from now on, while the other legs read."""
        ...

    async def scores(
        self, text: str, category_ids: Sequence[str] | None, candidates: Sequence[str]
    ) -> dict[str, float] | None:
        """{question id: cosine} of the questions it scores among its nearest and
        ``candidates``; None when it cannot run here."""
        ...


@dataclass(frozen=True)
class Answer:
    question: dict[str, Any]
    score: float
    confident: bool
    snippet: dict[str, str]

    def public(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "score": round(self.score, 4),
            "confident": self.confident,
            "snippet": self.snippet,
        }


_STOPWORDS_MAX = 50_000
_stopwords: OrderedDict[tuple[str, str], bool] = OrderedDict()
_STOPWORD_SQL = (
    "SELECT w, to_tsvector($1::regconfig, w) = ''::tsvector AS stop FROM unnest($2::text[]) AS w"
)


async def stopwords_among(
    session: AsyncSession, words: Sequence[str], locale: str
) -> frozenset[str]:
    """The words of ``words`` that PostgreSQL's configuration of ``locale`` ignores (its
    stopwords), known per process once asked (an LRU of ``_STOPWORDS_MAX`` words)."""
    config = config_for(locale)
    if config is None:
        return frozenset()
    unknown = [w for w in dict.fromkeys(words) if (config, w) not in _stopwords]
    if unknown:
        for row in await read_records(session, _STOPWORD_SQL, config, unknown):
            _stopwords[(config, row["w"])] = bool(row["stop"])
        while len(_stopwords) > _STOPWORDS_MAX:
            _stopwords.popitem(last=False)
    return frozenset(w for w in words if _stopwords.get((config, w)))


def checked_query(q: str) -> str:
    text = q.strip()
    if not text or not analyse(text, None, frozenset(), None, NO_SYNONYMS).words:
        raise ValidationFailed(
            "q must name at least one word.", details=field_error("q", "has no word to search")
        )
    return text


async def category_ids(session: AsyncSession, ref: str, audiences: Audiences = ()) -> list[str]:
    """The category ``ref`` (id or slug) and every category under it that readers of
    ``audiences`` may read (issue 39; None: all); 404 when unknown or not theirs to read."""
    by_ref = "id = $1" if looks_like_id(ref, "cat") else "slug = $1"
    top = category_rule_sql(audiences, "categories")
    below = category_rule_sql(audiences, "c")
    rows = await read_records(
        session,
        f"""
        WITH RECURSIVE tree AS (
            SELECT id FROM categories WHERE deleted_at IS NULL AND {by_ref}
                {f"AND {top}" if top else ""}
            UNION
            SELECT c.id FROM categories c JOIN tree ON c.parent_id = tree.id
            WHERE c.deleted_at IS NULL {f"AND {below}" if below else ""}
        )
        SELECT id FROM tree
        """,
        ref,
    )
    if not rows:
        raise CategoryNotFound()
    return [r["id"] for r in rows]


LONG_QUERY_WORDS = 12  # more words are analysed in a thread: each may be a typo to correct


async def terms_of(
    session: AsyncSession, q: str, locale: str, vocabulary: Vocabulary
) -> QueryTerms:
    """The query's terms. Typo corrections look each unknown word up in the org's vocabulary
    (about a millisecond a word at 100,000 questions): a long query (up to 500 characters) is
    analysed off the event loop (issue 42)."""
    index = await synonyms.index_for(session, locale)
    plain = analyse(q, None, frozenset(), None, NO_SYNONYMS)
    # The words of the groups the query names too: a member's stopword ("mon" of "récupérer
    # mon argent") is no alternative of its group.
    named, _ = matched_synonyms(plain.words, index)
    members = [w for group in named for member in group for w in member.split()]
    # A stopword is known as written ("à", "même"): its folded form ("a") may not be one.
    typed = {word: fold(word) for word in RAW_WORD.findall(q.lower())}
    asked = await stopwords_among(session, [*plain.words, *members, *typed], locale)
    stop = asked | {typed[word] for word in typed if word in asked}
    if len(plain.words) > LONG_QUERY_WORDS:
        return await asyncio.to_thread(analyse, q, locale, stop, vocabulary.corrector, index)
    return analyse(q, locale, stop, vocabulary.corrector, index)


_vocabularies = VocabularyCache()


async def vocabulary_of(session: AsyncSession, locale: str) -> Vocabulary:
    """The org's vocabulary in ``locale`` from this process's cache (``api.answers.vocabulary``),
    loaded on a session of its own so that a background refresh outlives the request."""

    async def loader() -> Vocabulary:
        async with sibling_session(session) as own:
            return await vocabulary.load(own, locale)

    return await _vocabularies.get(org_path(session), locale, loader)


async def answers_for(
    session: AsyncSession,
    reader: Principal,
    *,
    q: str,
    locale: str,
    limit: int,
    category: str | None,
) -> list[Answer]:
    """``find_answers`` with the org's vocabulary and this process's embedder, for ``reader``
    (the principal of any door: a key, a member, a help-center visitor): what the API, the
    help center and the MCP server call (``session``: the org's). Drafts show to secret keys
    only, whatever the door; every leg reads only what ``reader`` may read (issue 39)."""
    audiences = reader_audiences(reader)
    return await find_answers(
        session,
        q=q,
        locale=locale,
        limit=limit,
        category=category,
        vocabulary=await vocabulary_of(session, locale),
        semantic=EmbeddingsLeg(session, locale, audiences),
        cross_lingual=(
            CrossLingualLeg(session, locale, audiences) if reads_across(reader, locale) else None
        ),
        drafts=not reader.public,
        audiences=audiences,
    )


def reads_across(reader: Principal, locale: str) -> bool:
    """Whether a reader in ``locale`` gets the cross-lingual leg: the org serves several
    languages (only then has it readers in another) and ``locale``'s is not the org's
    default locale's, the language its questions are written in. A reader in the default
    language costs nothing more."""
    return serves_several_languages(reader.locales) and language_of(locale) != language_of(
        reader.default_locale
    )


async def find_answers(
    session: AsyncSession,
    *,
    q: str,
    locale: str,
    limit: int,
    category: str | None,
    vocabulary: Vocabulary,
    semantic: Semantic | None = None,
    cross_lingual: CrossLingual | None = None,
    drafts: bool = False,
    audiences: Audiences = (),
) -> list[Answer]:
    """The published questions that best answer ``q``, best first, at most ``limit``
    (``drafts``: whether each shows its draft; never to a publishable key; ``cross_lingual``:
    the leg of questions in another language with no translation in ``locale``;
    ``audiences``: the reader's, ``api.audiences.visibility``: each leg reads only what the
    reader may read, before any limit; the legs given are built for the same audiences)."""
    q = checked_query(q)
    ids = await category_ids(session, category, audiences) if category is not None else None
    # The multilingual model's query embedding runs while the query is analysed.
    if semantic is not None:
        semantic.start(q)
    if cross_lingual is not None:
        cross_lingual.start(q)
    terms = await terms_of(session, q, locale, vocabulary)
    near = (
        await semantic.nearest(terms.text(), ids, terms.sentence(q))
        if semantic is not None
        else None
    )
    hits = await lexical.search(
        session,
        terms.lexemes,
        locale=locale,
        vocabulary=vocabulary,
        category_ids=ids,
        also=list(near or ()),
        audiences=audiences,
    )
    if semantic is not None and near is not None:
        near = await semantic.cosines([h.question_id for h in hits])
    # The query as typed (typo corrections and synonyms are of the reader's language; the
    # multilingual model reads it whole), embedded since before the analysis; one read for its
    # nearest questions and the lexical candidates' cosines (a question only it finds is
    # scored by that cosine, its coverage 0: across languages words rarely meet).
    across = (
        await cross_lingual.scores(q, ids, [h.question_id for h in hits])
        if cross_lingual is not None
        else None
    )
    leg = semantic.leg if semantic is not None else ranking.SEMANTIC
    ranked = ranking.rank(hits, near, terms.concepts, vocabulary, across, leg)[:limit]
    if not ranked:
        return []
    sure = ranking.confident(ranked, locale)
    questions = await served_questions(
        session, [r.question_id for r in ranked], locale, drafts=drafts, audiences=audiences
    )
    highlighter = snippets.Highlighter([*terms.words, *terms.synonyms], locale, terms.lexemes)
    answers: list[Answer] = []
    for index, item in enumerate(ranked):
        question = questions.get(item.question_id)
        if question is None:  # deleted or unpublished since the candidates were read
            continue
        snippet = {
            "title": highlighter.mark(question["title"]),
            "answer": highlighter.excerpt(snippets.plain_text(question["answer"])),
        }
        answers.append(Answer(question, item.score, sure and index == 0, snippet))
    return answers


async def served_questions(
    session: AsyncSession,
    ids: Sequence[str],
    locale: str,
    *,
    published_only: bool = True,
    drafts: bool,
    audiences: Audiences = (),
) -> dict[str, dict[str, Any]]:
    """The live (``published_only``: published) questions ``ids`` exactly as GET serves them
    in ``locale`` (with ``externalId`` and ``draft``), of those readers of ``audiences`` may
    read (None: all)."""
    statement = queries.in_locale(locale).where(Question.id.in_(list(ids)))
    if published_only:
        statement = statement.where(Question.status == "published")
    if audiences is not None:
        statement = statement.where(question_visible(audiences))
    rows = (await read_rows(session, statement)).all()
    return {row.id: question_read(row, drafts) for row in rows}
