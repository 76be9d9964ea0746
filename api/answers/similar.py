"""Questions like a question: likely duplicates for editors (``GET /questions/{idOrSlug}/similar``)
and the help center's "Related questions".

By meaning: the question's own embedding against the others' (``vectors.similar_to`` for
editors, any status; ``vectors.nearest`` with published questions only for readers). A
question without an embedding yet (or without pgvector) falls back to its title's words as
served in the locale (the lexical leg of ``/answers``, published questions only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers import lexical, vectors
from api.answers.embedder import current_embedder
from api.answers.semantic import semantic_status
from api.answers.service import served_questions, terms_of, vocabulary_of
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


async def _by_words(
    session: AsyncSession, question_id: str, title: str, locale: str, limit: int
) -> list[tuple[str, float]]:
    vocabulary = await vocabulary_of(session, locale)
    terms = await terms_of(session, title, locale, vocabulary)
    hits = await lexical.search(
        session, terms.lexemes, locale=locale, vocabulary=vocabulary, category_ids=None
    )
    best = max((hit.score for hit in hits), default=0.0) or 1.0
    return [(h.question_id, h.score / best) for h in hits if h.question_id != question_id][:limit]


async def _served_title(session: AsyncSession, question_id: str, own: str, locale: str) -> str:
    """The question's title as served in ``locale`` (its published translation's, else its
    own): the words the others' texts in ``locale`` are compared with."""
    served = await served_questions(
        session, [question_id], locale, published_only=False, drafts=False
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
) -> list[Similar]:
    """Up to ``limit`` questions most like ``ref`` (id or slug; 404 when unknown), best first."""
    question = await load(session, ref)
    if published_only:
        found = await _related(session, question.id, locale, limit)
    else:
        found = await vectors.similar_to(session, question.id, locale, limit)
    found = [(qid, score) for qid, score in found if score >= MIN_SIMILARITY]
    if not found:
        title = await _served_title(session, question.id, question.title, locale)
        found = await _by_words(session, question.id, title, locale, limit)
    served = await served_questions(
        session, [qid for qid, _ in found], locale, published_only=published_only, drafts=drafts
    )
    return [Similar(served[qid], score) for qid, score in found if qid in served]


async def _related(
    session: AsyncSession, question_id: str, locale: str, limit: int
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
        session, vector, locale=locale, limit=limit + 1, published_only=True, category_ids=None
    )
    return [(qid, score) for qid, score in near if qid != question_id][:limit]


RELATED = 5  # "Related questions" on a help-center question page


async def related_for_readers(
    session: AsyncSession, question_id: str, locale: str, limit: int = RELATED
) -> list[dict[str, Any]]:
    """The help center's "Related questions" of a published question: published ones only,
    as ``{"slug", "title"}`` in ``locale``."""
    found = await similar_questions(
        session, question_id, locale, limit, published_only=True, drafts=False
    )
    return [{"slug": s.question["slug"], "title": s.question["title"]} for s in found]
