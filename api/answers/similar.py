"""Questions like a question: likely duplicates for editors (``GET /questions/{idOrSlug}/similar``)
and the help center's "Related questions".

By meaning: the question's own embedding against the others' (``vectors.similar_to`` for
editors, any status; ``vectors.nearest`` with published questions only for readers). A
question without an embedding yet (or without pgvector) falls back to its title's words as
served in the locale (the lexical leg of ``/answers``, published questions only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers import lexical, vectors
from api.answers.embedder import current_embedder
from api.answers.semantic import semantic_status
from api.answers.service import served_questions, terms_of, vocabulary_of
from api.audiences.visibility import Audiences
from api.questions.queries import load
from tenancy.db import read_records

MIN_SIMILARITY = 0.5  # below it, two questions are rarely about the same thing
_VECTOR_SQL = """
SELECT embedding::text AS embedding FROM question_embeddings
WHERE question_id = $1 AND locale = $2 AND model = $3
"""


@dataclass(frozen=True)
class Similar:
    question: dict[str, Any]
    score: float

    def public(self) -> dict[str, Any]:
        return {"question": self.question, "score": round(self.score, 4)}


async def _lexical_hits(
    session: AsyncSession, words: str, locale: str, audiences: Audiences
) -> list[lexical.LexicalHit]:
    """The lexical leg's hits for ``words`` in ``locale``, over what readers of
    ``audiences`` may read."""
    vocabulary = await vocabulary_of(session, locale)
    terms = await terms_of(session, words, locale, vocabulary)
    return await lexical.search(
        session,
        terms.lexemes,
        locale=locale,
        vocabulary=vocabulary,
        category_ids=None,
        audiences=audiences,
    )


async def _by_words(
    session: AsyncSession,
    question_id: str,
    title: str,
    locale: str,
    limit: int,
    audiences: Audiences,
) -> list[tuple[str, float]]:
    hits = await _lexical_hits(session, title, locale, audiences)
    best = max((hit.score for hit in hits), default=0.0) or 1.0
    return [(h.question_id, h.score / best) for h in hits if h.question_id != question_id][:limit]


async def _served_title(session: AsyncSession, question_id: str, own: str, locale: str) -> str:
    """The question's title as served in ``locale`` (its published translation's, else its
    own): the words the others' texts in ``locale`` are compared with."""
    served = await served_questions(
        session, [question_id], locale, published_only=False, drafts=False, audiences=None
    )
    question = served.get(question_id)
    return str(question["title"]) if question is not None else own


async def similar_questions(
    session: AsyncSession,
    ref: str,
    locale: str,
    limit: int,
    *,
    published_only: bool,
    drafts: bool,
    audiences: Audiences = None,
) -> list[Similar]:
    """Up to ``limit`` questions most like ``ref`` (id or slug; 404 when unknown), best first
    (``audiences``: only those its readers may read, ``api.audiences.visibility``; None: the
    editors' view, no audience rule)."""
    question = await load(session, ref)
    if published_only:
        found = await _related(session, question.id, locale, limit, audiences)
    else:
        found = await vectors.similar_to(session, question.id, locale, limit)
    found = [(qid, score) for qid, score in found if score >= MIN_SIMILARITY]
    if not found:
        title = await _served_title(session, question.id, question.title, locale)
        found = await _by_words(session, question.id, title, locale, limit, audiences)
    served = await served_questions(
        session,
        [qid for qid, _ in found],
        locale,
        published_only=published_only,
        drafts=drafts,
        audiences=audiences,
    )
    return [Similar(served[qid], score) for qid, score in found if qid in served]


async def _related(
    session: AsyncSession, question_id: str, locale: str, limit: int, audiences: Audiences
) -> list[tuple[str, float]]:
    engine = session.bind
    if not isinstance(engine, AsyncEngine) or not (await semantic_status(engine)).available:
        return []  # no embeddings here: words only
    model = current_embedder().name
    rows = await read_records(session, _VECTOR_SQL, question_id, locale, model)
    if not rows:
        return []
    vector = [float(v) for v in rows[0]["embedding"].strip("[]").split(",")]
    near = await vectors.nearest(
        session,
        vector,
        locale=locale,
        limit=limit + 1,
        published_only=True,
        category_ids=None,
        audiences=audiences,
    )
    return [(qid, score) for qid, score in near if qid != question_id][:limit]


RELATED = 5  # "Related questions" on a help-center question page
# A neighbour by words scores at least this share of the question's own score (its title's
# words against itself): one common word shared is not a relation (issue 41).
RELATED_WORDS_FLOOR = 0.3


# The words that make a title a question ("How do I...", "Comment ...") say nothing of what
# it is about: two titles sharing only them are not related. PostgreSQL's stop words drop
# some (English "how", "what"), not all ("comment" in French); per language, lower case.
_QUESTION_WORDS = {
    "en": "how what why when where which who whom whose can could do does did is are was were "
    "should would will may might i my me we our you your it",
    "fr": "comment pourquoi quand où quel quelle quels quelles qui que quoi qu est ce combien "
    "puis je peut on peux dois faut il mon ma mes",
    "de": "wie was warum wann wo welche welcher welches wer kann können ich mein meine ist "
    "sind gibt es",
    "es": "cómo como qué que por porqué cuándo cuando dónde donde cuál cuáles quién puedo "
    "puede mi mis es hay",
    "it": "come cosa perché quando dove quale quali chi posso può mio mia è",
    "pt": "como que quê porque quando onde qual quais quem posso pode meu minha é",
    "nl": "hoe wat waarom wanneer waar welke wie kan kun ik mijn is",
}
QUESTION_WORDS = {language: frozenset(words.split()) for language, words in _QUESTION_WORDS.items()}
_WORD = re.compile(r"[^\W_]+")


def topic_words(title: str, locale: str) -> str:
    """``title`` without its language's ``QUESTION_WORDS``."""
    dropped = QUESTION_WORDS.get(_language(locale), frozenset())
    return " ".join(w for w in _WORD.findall(title) if w.lower() not in dropped)


async def _related_by_words(
    session: AsyncSession, question_id: str, title: str, locale: str, audiences: Audiences
) -> list[tuple[str, float]]:
    hits = await _lexical_hits(session, topic_words(title, locale), locale, audiences)
    own = next((h.score for h in hits if h.question_id == question_id), 0.0)
    if own <= 0:
        return []
    return [
        (h.question_id, h.score / own)
        for h in hits
        if h.question_id != question_id and h.score >= RELATED_WORDS_FLOOR * own
    ]


def _language(tag: str) -> str:
    return tag.split("-")[0].lower()


async def related_for_readers(
    session: AsyncSession,
    question_id: str,
    locale: str,
    limit: int = RELATED,
    *,
    audiences: Audiences = (),
) -> list[dict[str, Any]]:
    """The help center's "Related questions" of a published question, as ``{"slug",
    "title"}``: published ones its readers (``audiences``, issue 39) may read, by meaning
    (``MIN_SIMILARITY``), else by words (``RELATED_WORDS_FLOOR``), and only those served in the
    page's language (a question not translated into it is not listed on its page). None
    rather than noise (issue 41)."""
    question = await load(session, question_id)
    found = [
        (qid, score)
        for qid, score in await _related(session, question.id, locale, limit * 2, audiences)
        if score >= MIN_SIMILARITY
    ]
    if not found:
        title = await _served_title(session, question.id, question.title, locale)
        found = await _related_by_words(session, question.id, title, locale, audiences)
    served = await served_questions(
        session,
        [qid for qid, _ in found],
        locale,
        published_only=True,
        drafts=False,
        audiences=audiences,
    )
    language = _language(locale)
    shown = [
        served[qid]
        for qid, _ in found
        if qid in served and _language(str(served[qid]["locale"])) == language
    ]
    return [{"slug": q["slug"], "title": q["title"]} for q in shown[:limit]]
