"""Exports, the actor's half (``exports.run``): every audience, category (parents first),
question (with its revisions when asked; categories and questions with their audiences),
translation, synonym group, webhook (never its secret) and the settings, read from one
snapshot in batches and written as a zip of NDJSON files (``docs/export-bundle.schema.json``)
whose pieces go to ``export_chunks`` as they fill. Compression runs in a thread; at most a
batch and a piece are held."""

from __future__ import annotations

import asyncio
import io
import zipfile
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import Select, insert, literal, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers.models import SynonymSet
from api.audiences.models import Audience
from api.audiences.schemas import audience_public
from api.categories.models import Category
from api.exports.models import Export, ExportChunk
from api.exports.service import KEEP_HOURS
from api.imports.bundle import BUNDLE_FORMAT, BUNDLE_VERSION
from api.imports.upload import CHUNK_BYTES
from api.jobs import claim_queued, org_context, schema_of
from api.questions.models import Question, QuestionRevision
from api.settings.service import get_settings
from api.translations.models import CategoryTranslation, QuestionTranslation
from api.webhooks.models import Webhook
from tenancy.clock import iso, utcnow
from tenancy.db import tenant_session
from tenancy.principal import Principal
from tenancy.transactions import commit

BATCH_ROWS = 500


class Sink(io.RawIOBase):
    """Where the zip is written: bytes collected until a piece is full (not seekable, so
    ``zipfile`` writes data descriptors)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.buffer.extend(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position


def category_line(c: Any) -> dict[str, Any]:
    return {
        "id": c.id,
        "parentId": c.parent_id,
        "name": c.name,
        "slug": c.slug,
        "description": c.description,
        "order": c.sort_order,
        "isDefault": c.is_default,
        "audiences": list(c.audiences or ()),
        "locale": c.locale,
        "createdAt": iso(c.created_at),
        "updatedAt": iso(c.updated_at),
    }


def question_line(q: Any) -> dict[str, Any]:
    return {
        "id": q.id,
        "categoryId": q.category_id,
        "title": q.title,
        "answer": q.answer,
        "slug": q.slug,
        "status": q.status,
        "order": q.sort_order,
        "audiences": list(q.audiences or ()),
        "locale": q.locale,
        "scheduledPublishAt": iso(q.scheduled_publish_at),
        "publishedAt": iso(q.published_at),
        "createdAt": iso(q.created_at),
        "updatedAt": iso(q.updated_at),
    }


def _categories_parents_first() -> Select[Any]:
    live = Category.deleted_at.is_(None)
    tree = (
        select(Category.id, literal(0).label("depth"))
        .where(Category.parent_id.is_(None), live)
        .cte("tree", recursive=True)
    )
    tree = tree.union_all(
        select(Category.id, (tree.c.depth + 1).label("depth"))
        .join(tree, Category.parent_id == tree.c.id)
        .where(live)
    )
    return (
        select(*Category.__table__.c)
        .join(tree, tree.c.id == Category.id)
        .order_by(tree.c.depth, Category.sort_order, Category.id)
    )


class Bundle:
    def __init__(self, engine: AsyncEngine, org: Principal, export_id: str) -> None:
        self.engine = engine
        self.org = org
        self.export_id = export_id
        self.sink = Sink()
        self.zip = zipfile.ZipFile(self.sink, "w", compression=zipfile.ZIP_DEFLATED)
        self.seq = 0
        self.counts: dict[str, int] = {}

    async def _drain(self, final: bool = False) -> None:
        while len(self.sink.buffer) >= CHUNK_BYTES or (final and self.sink.buffer):
            piece = bytes(self.sink.buffer[:CHUNK_BYTES])
            del self.sink.buffer[:CHUNK_BYTES]
            async with tenant_session(self.engine, self.org.schema_name) as session:
                await session.execute(
                    insert(ExportChunk).values(export_id=self.export_id, seq=self.seq, data=piece)
                )
                await commit(session)
            self.seq += 1

    async def ndjson(
        self,
        name: str,
        session: AsyncSession,
        stmt: Select[Any],
        line: Callable[[Any], dict[str, Any]],
        extend: Callable[[list[dict[str, Any]]], Any] | None = None,
    ) -> None:
        handle = self.zip.open(name, "w", force_zip64=True)
        count = 0
        result = await session.stream(stmt.execution_options(yield_per=BATCH_ROWS))
        async for rows in result.partitions(BATCH_ROWS):
            lines = [line(r) for r in rows]
            if extend is not None:
                await extend(lines)
            count += len(lines)
            data = b"".join(orjson.dumps(item) + b"\n" for item in lines)
            await asyncio.to_thread(handle.write, data)
            await self._drain()
        await asyncio.to_thread(handle.close)
        self.counts[name.removesuffix(".ndjson")] = count

    async def json(self, name: str, value: Any) -> None:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
        await asyncio.to_thread(self.zip.writestr, name, data)
        await self._drain()

    async def finish(self) -> int:
        await asyncio.to_thread(self.zip.close)
        await self._drain(final=True)
        return self.sink.position


async def _revisions_of(session: AsyncSession, lines: list[dict[str, Any]]) -> None:
    ids = [q["id"] for q in lines]
    rows = await session.execute(
        select(QuestionRevision)
        .where(QuestionRevision.question_id.in_(ids))
        .order_by(QuestionRevision.question_id, QuestionRevision.number)
    )
    by_question: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    for r in rows.scalars():
        by_question[r.question_id].append(
            {
                "number": r.number,
                "actor": r.actor,
                "changedFields": r.changed_fields,
                "snapshot": r.snapshot,
                "createdAt": iso(r.created_at),
            }
        )
    session.expunge_all()
    for line in lines:
        line["revisions"] = by_question[line["id"]]


async def write_bundle(bundle: Bundle, session: AsyncSession, revisions: bool) -> None:
    live_question = Question.deleted_at.is_(None)
    live_category = Category.deleted_at.is_(None)
    await bundle.json("settings.json", await get_settings(session, bundle.org))
    # As GET shows them, before the content that names them: an import makes them first.
    audiences = (
        select(*Audience.__table__.c)
        .where(Audience.deleted_at.is_(None))
        .order_by(Audience.created_at, Audience.id)
    )
    await bundle.ndjson("audiences.ndjson", session, audiences, audience_public)
    await bundle.ndjson("categories.ndjson", session, _categories_parents_first(), category_line)
    questions = select(*Question.__table__.c).where(live_question).order_by(Question.id)

    async def with_revisions(lines: list[dict[str, Any]]) -> None:
        await _revisions_of(session, lines)

    await bundle.ndjson(
        "questions.ndjson",
        session,
        questions,
        question_line,
        with_revisions if revisions else None,
    )
    question_translations = (
        select(*QuestionTranslation.__table__.c)
        .join(Question, Question.id == QuestionTranslation.question_id)
        .where(live_question)
        .order_by(QuestionTranslation.question_id, QuestionTranslation.locale)
    )
    category_translations = (
        select(*CategoryTranslation.__table__.c)
        .join(Category, Category.id == CategoryTranslation.category_id)
        .where(live_category)
        .order_by(CategoryTranslation.category_id, CategoryTranslation.locale)
    )
    handle = bundle.zip.open("translations.ndjson", "w", force_zip64=True)
    count = 0
    for stmt, kind in ((question_translations, "question"), (category_translations, "category")):
        result = await session.stream(stmt.execution_options(yield_per=BATCH_ROWS))
        async for rows in result.partitions(BATCH_ROWS):
            lines = [_translation_line(kind, r) for r in rows]
            count += len(lines)
            data = b"".join(orjson.dumps(item) + b"\n" for item in lines)
            await asyncio.to_thread(handle.write, data)
            await bundle._drain()
    await asyncio.to_thread(handle.close)
    bundle.counts["translations"] = count
    await bundle.ndjson(
        "synonyms.ndjson",
        session,
        select(*SynonymSet.__table__.c).order_by(SynonymSet.locale),
        lambda r: {"locale": r.locale, "groups": r.groups},
    )
    await bundle.ndjson(
        "webhooks.ndjson",
        session,
        select(*Webhook.__table__.c).where(Webhook.deleted_at.is_(None)).order_by(Webhook.id),
        lambda w: {
            "id": w.id,
            "url": w.url,
            "events": list(w.events),
            "active": w.active,
            "description": w.description,
        },
    )


def _translation_line(kind: str, r: Any) -> dict[str, Any]:
    if kind == "question":
        return {
            "resource": "question",
            "id": r.question_id,
            "locale": r.locale,
            "title": r.title,
            "answer": r.answer,
            "status": r.status,
        }
    return {
        "resource": "category",
        "id": r.category_id,
        "locale": r.locale,
        "name": r.name,
        "description": r.description,
    }


async def run_export(engine: AsyncEngine, org_id: str, export_id: str) -> dict[str, Any] | None:
    """Build a queued export (a message delivered twice builds it once)."""
    schema = await schema_of(engine, org_id)
    if schema is None:
        return None
    job = await claim_queued(engine, schema, Export, export_id)
    if job is None:
        return None
    org = await org_context(engine, org_id, job.actor)
    bundle = Bundle(engine, org, export_id)
    status, error = "succeeded", None
    try:
        async with tenant_session(engine, schema) as snapshot:
            await snapshot.connection(execution_options={"isolation_level": "REPEATABLE READ"})
            await write_bundle(bundle, snapshot, bool(job.options.get("revisions")))
            await snapshot.rollback()
        manifest = {
            "format": BUNDLE_FORMAT,
            "version": BUNDLE_VERSION,
            "exportedAt": iso(utcnow()),
            "org": {"slug": org.slug},
            "includesRevisions": bool(job.options.get("revisions")),
            "counts": bundle.counts,
        }
        await bundle.json("manifest.json", manifest)
        size = await bundle.finish()
    except Exception:
        status, error, size = "failed", "the export stopped on an internal error", 0
    now = utcnow()
    async with tenant_session(engine, schema) as session:
        await session.execute(
            update(Export)
            .where(Export.id == export_id)
            .values(
                status=status,
                error=error,
                counts=bundle.counts,
                size_bytes=size,
                finished_at=now,
                expires_at=now + timedelta(hours=KEEP_HOURS) if status == "succeeded" else None,
            )
        )
        await commit(session)
    return {"status": status, "counts": bundle.counts, "sizeBytes": size}
