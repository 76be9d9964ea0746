"""Writing question embeddings (the domain half of ``tasks/embeddings.py``; no Quart).

``embed_questions`` brings the embeddings of some questions up to date: one per live question
and locale (the question's own and each translation's) that the embedder serves, keyed by
model; text whose hash matches the stored row is not embedded again, and rows of deleted
questions or translations go. The embedder is called with no transaction open, and a vector
is written only if its question's text is still the one embedded (a change meanwhile has
queued its own run). ``backfill`` does that for every question of an org in bounded batches,
then removes the rows of models it was not given.

Every org has the vectors of two models in the same table (``embedders``): the configured
embedder's (WordLlama by default, English) and the multilingual one's (``api.answers.multilingual``:
every language), each of every text it serves; ``/answers`` blends their cosines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers.embedder import Embedder, serves
from api.answers.embedding_text import content_hash, embedding_text
from api.answers.question_vectors import question_vectors
from api.answers.vectors import vector_literal
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tenancy.transactions import commit

BACKFILL_BATCH = 200

# Every text of the questions (the live question's own locale and its translations').
_TEXTS = text(
    "SELECT q.id, q.locale, q.title, q.answer, true AS own FROM questions q"
    " WHERE q.id IN :ids AND q.deleted_at IS NULL"
    " UNION ALL SELECT t.question_id, t.locale, t.title, t.answer, false"
    " FROM question_translations t JOIN questions q ON q.id = t.question_id"
    " WHERE t.question_id IN :ids AND q.deleted_at IS NULL"
).bindparams(bindparam("ids", expanding=True))
_STORED = text(
    "SELECT question_id, locale, content_hash FROM question_embeddings"
    " WHERE question_id IN :ids AND model = :model"
).bindparams(bindparam("ids", expanding=True))
_UPSERT = text(
    "INSERT INTO question_embeddings"
    " (question_id, locale, model, dimensions, content_hash, embedding, updated_at)"
    " VALUES (:question_id, :locale, :model, :dimensions, :content_hash,"
    " CAST(CAST(:embedding AS text) AS public.vector), :updated_at)"
    " ON CONFLICT (question_id, locale, model) DO UPDATE SET"
    " dimensions = excluded.dimensions, content_hash = excluded.content_hash,"
    " embedding = excluded.embedding, updated_at = excluded.updated_at"
)
_DELETE = text(
    "DELETE FROM question_embeddings"
    " WHERE question_id = :question_id AND locale = :locale AND model = :model"
)
_PAGE = text(
    "SELECT id FROM questions WHERE deleted_at IS NULL AND id > :after ORDER BY id LIMIT :limit"
)
_OTHER_MODELS = text(
    "DELETE FROM question_embeddings WHERE ctid IN (SELECT ctid FROM question_embeddings"
    " WHERE model NOT IN :models LIMIT :limit) RETURNING question_id"
).bindparams(bindparam("models", expanding=True))

Key = tuple[str, str]  # (question id, locale)


@dataclass
class EmbedCounts:
    embedded: int = 0
    unchanged: int = 0
    deleted: int = 0

    def add(self, other: EmbedCounts) -> None:
        self.embedded += other.embedded
        self.unchanged += other.unchanged
        self.deleted += other.deleted


async def _texts(session: AsyncSession, ids: Sequence[str], embedder: Embedder) -> dict[Key, str]:
    """The texts ``embedder`` embeds: of each locale it serves."""
    rows = (await session.execute(_TEXTS, {"ids": list(ids)})).all()
    return {
        (row.id, row.locale): embedding_text(row.title, row.answer)
        for row in rows
        if serves(embedder, row.locale)
    }


async def embed_questions(
    engine: AsyncEngine,
    schema: str,
    question_ids: Sequence[str],
    embedders: Sequence[Embedder],
) -> EmbedCounts:
    """Bring the embeddings of ``question_ids`` (of the org of ``schema``) up to date, of each
    of ``embedders`` in turn: one read transaction, the embedder with none open, then one
    write transaction (none when nothing changed)."""
    counts = EmbedCounts()
    for embedder in embedders:
        counts.add(await _embed_with(engine, schema, question_ids, embedder))
    return counts


async def _embed_with(
    engine: AsyncEngine,
    schema: str,
    question_ids: Sequence[str],
    embedder: Embedder,
) -> EmbedCounts:
    ids = sorted(set(question_ids))
    if not ids:
        return EmbedCounts()
    async with tenant_session(engine, schema) as session:
        wanted = await _texts(session, ids, embedder)
        stored = {
            (row.question_id, row.locale): row.content_hash
            for row in await session.execute(_STORED, {"ids": ids, "model": embedder.name})
        }
        await session.rollback()
    hashes = {key: content_hash(value) for key, value in wanted.items()}
    todo = [key for key in wanted if stored.get(key) != hashes[key]]
    gone = [key for key in stored if key not in wanted]
    counts = EmbedCounts(unchanged=len(wanted) - len(todo))
    if not todo and not gone:
        return counts
    vectors = await question_vectors(embedder, [wanted[key] for key in todo])

    async with tenant_session(engine, schema) as session:
        # Written only where the question's text is still what was embedded.
        current = await _texts(session, ids, embedder) if todo else wanted
        now = utcnow()
        rows = [
            {
                "question_id": key[0],
                "locale": key[1],
                "model": embedder.name,
                "dimensions": embedder.dimensions,
                "content_hash": hashes[key],
                "embedding": vector_literal(vector),
                "updated_at": now,
            }
            for key, vector in zip(todo, vectors, strict=True)
            if key in current and content_hash(current[key]) == hashes[key] and any(vector)
        ]
        gone += [key for key in todo if key not in current]
        if rows:
            await session.execute(_UPSERT, rows)
        if gone:
            await session.execute(
                _DELETE,
                [{"question_id": q, "locale": loc, "model": embedder.name} for q, loc in gone],
            )
        await commit(session)
    counts.embedded, counts.deleted = len(rows), len(gone)
    return counts


async def backfill(
    engine: AsyncEngine,
    schema: str,
    embedders: Sequence[Embedder],
    batch: int = BACKFILL_BATCH,
    progress: Callable[[int, EmbedCounts], None] | None = None,
) -> EmbedCounts:
    """Every live question of the org (``batch`` at a time, keyset order), then the rows of
    any model but those of ``embedders`` (after a model change), ``batch`` per statement;
    ``progress`` is told the questions done and the vectors' counts so far after each
    batch."""
    models = [embedder.name for embedder in embedders]
    total = EmbedCounts()
    questions = 0
    after = ""
    while True:
        async with tenant_session(engine, schema) as session:
            ids = list((await session.execute(_PAGE, {"after": after, "limit": batch})).scalars())
            await session.rollback()
        if not ids:
            break
        total.add(await embed_questions(engine, schema, ids, embedders))
        after = ids[-1]
        questions += len(ids)
        if progress is not None:
            progress(questions, total)
    while True:
        async with tenant_session(engine, schema) as session:
            removed = len(
                (await session.execute(_OTHER_MODELS, {"models": models, "limit": batch})).all()
            )
            await commit(session)
        total.deleted += removed
        if removed < batch:
            return total
