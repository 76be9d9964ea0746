"""Imports, the actor's half (``imports.run``): the stored upload parsed in a thread and
written in batches, each batch one transaction (a dry run: one transaction, rolled back), the
job's counts and progress updated with each batch, and one ``import.completed`` event at the
end instead of an event per question (unless the import asked for them). Each change's
``audit`` event stays: the org's audit log, and what derived data follows (the relay queues
the changed questions' embeddings from it, ``tasks/embeddings.py``), as for any API write."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog
from sqlalchemy import ColumnElement, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.imports.context import ParseContext
from api.imports.formats import FORMATS
from api.imports.items import Item, MalformedUpload
from api.imports.links import RULES
from api.imports.models import Import
from api.imports.references import DeferredLink
from api.imports.report import OUTCOMES, Report
from api.imports.service import (
    CANCELLED,
    FAILED,
    SUCCEEDED,
    import_public,
)
from api.imports.upload import UploadReader, chunk_fetcher, drop_upload, parse_in_thread
from api.imports.writer import Writer
from api.jobs import claim_queued, org_context, schema_of
from billing.plans import Plan, import_inflated_bytes
from tenancy.audit import AUDIT_EVENT
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tenancy.outbox import OUTBOX, record_events
from tenancy.principal import Principal
from tenancy.progress import ProgressLog
from tenancy.transactions import commit

log = structlog.get_logger(__name__)
BATCH_ITEMS = 200  # items of one transaction
# After each batch, a pause of this share of the time it took: PostgreSQL is every org's, and
# between an import's batches other orgs' reads get it (parsing and conversion go on
# meanwhile, so the import loses less than this share). Bench row ``transfers``.
PACE = 0.1


async def pause(took: float) -> None:
    """The pause after a batch that took ``took`` seconds."""
    await asyncio.sleep(PACE * took)


COMPLETED_EVENT = "import.completed"


def _events_of(ids: list[str]) -> ColumnElement[bool]:
    data = OUTBOX.c.data
    return or_(
        data["id"].astext.in_(ids),
        data["questionId"].astext.in_(ids),
        data["categoryId"].astext.in_(ids),
    )


async def suppress_events(session: AsyncSession, ids: set[str]) -> None:
    """Drop the webhook events this transaction wrote about ``ids`` (their audit events
    stay: the audit log and the embeddings follow them): an import is one
    ``import.completed`` event. The rows are this transaction's own
    (``created_at`` is its start time, ``now()``; no other transaction's are visible
    uncommitted), so nothing another writer recorded is touched."""
    if not ids:
        return
    await session.execute(
        delete(OUTBOX).where(
            OUTBOX.c.event != AUDIT_EVENT,
            OUTBOX.c.created_at == func.now(),
            _events_of(sorted(ids)),
        )
    )


def _answer(link: DeferredLink) -> tuple[str, str, str]:
    return link.kind, link.source, link.locale


class Run:
    def __init__(self, engine: AsyncEngine, org: Principal, job: Import) -> None:
        self.engine = engine
        self.org = org
        self.job = job
        self.report = Report()
        self.writer = Writer(org, self.report)
        self.per_question_events = bool(job.options.get("perQuestionEvents"))
        self.cancelled = False
        self.reader: UploadReader | None = None
        self.progress: Callable[[int, int], None] | None = None  # (bytes read, items)
        self.log = ProgressLog(
            log, "import", import_id=job.id, org_id=org.id, format=job.format, dry_run=job.dry_run
        )

    def session(self) -> AsyncSession:
        return tenant_session(self.engine, self.org.schema_name)

    async def _save(self, session: AsyncSession, **values: Any) -> bool:
        """The job's report so far (and ``values``); True when a cancel was asked."""
        assert self.reader is not None
        row = (
            await session.execute(
                update(Import)
                .where(Import.id == self.job.id)
                .values(
                    counts=self.report.counts,
                    errors=self.report.errors,
                    notes=self.report.warnings,
                    progress={"items": self.report.items, "bytesRead": self.reader.tell()},
                    **values,
                )
                .returning(Import.cancel_requested)
            )
        ).one()
        return bool(row.cancel_requested)

    async def _write_batch(self, session: AsyncSession, batch: list[Item]) -> None:
        await self.writer.write_batch(session, batch)
        self.report.items += len(batch)
        if not self.per_question_events:
            await suppress_events(session, self.writer.touched)
        self.writer.touched.clear()

    async def batch(self, batch: list[Item], dry: AsyncSession | None) -> None:
        started = time.monotonic()
        await self._batch(batch, dry)
        await pause(time.monotonic() - started)

    async def _batch(self, batch: list[Item], dry: AsyncSession | None) -> None:
        if dry is not None:
            await self._write_batch(dry, batch)
            async with self.session() as saving:
                self.cancelled = await self._save(saving)
                await commit(saving)
        else:
            async with self.session() as session:
                await self._write_batch(session, batch)
                self.cancelled = await self._save(session)
                await commit(session)
        if self.reader is not None:
            read = self.reader.tell()
            if self.progress is not None:
                self.progress(read, self.report.items)
            total = max(1, self.job.size_bytes)
            self.log.progress(
                items=self.report.items,
                bytes_read=read,
                percent=min(100, round(100 * read / total)),
                **{k: self.report.counts[k] for k in OUTCOMES},
            )

    async def relink(self, dry: AsyncSession | None) -> None:
        """The links to articles that came later in the file than their linking item, now
        that all are written: about a batch of links a transaction, an answer's links in one."""
        deferred, self.writer.deferred = self.writer.deferred, []
        start = 0
        while start < len(deferred):
            end = min(start + BATCH_ITEMS, len(deferred))
            while end < len(deferred) and _answer(deferred[end]) == _answer(deferred[end - 1]):
                end += 1
            chunk = deferred[start:end]
            if dry is not None:
                await self.writer.relink(dry, chunk)
                self.writer.touched.clear()
            else:
                async with self.session() as session:
                    await self.writer.relink(session, chunk)
                    if not self.per_question_events:
                        await suppress_events(session, self.writer.touched)
                    self.writer.touched.clear()
                    await self._save(session)
                    await commit(session)
            start = end

    async def run(self) -> None:
        fmt = FORMATS[self.job.format]
        loop = asyncio.get_running_loop()
        self.reader = UploadReader(
            loop,
            chunk_fetcher(self.engine, self.org.schema_name, self.job.id),
            self.job.size_bytes,
        )
        context = ParseContext(
            self.org.default_locale,
            import_inflated_bytes(Plan(self.org.plan)),
            ahead=True,
            links=self.job.format if self.job.format in RULES else None,
        )
        dry = self.session() if self.job.dry_run else None
        try:
            batch: list[Item] = []
            items = parse_in_thread(
                self.reader, lambda file: context.resolved(fmt.parse(file, context))
            )
            async for item in items:
                batch.append(item)
                if len(batch) >= BATCH_ITEMS:
                    await self.batch(batch, dry)
                    batch = []
                    if self.cancelled:
                        await items.aclose()
                        break
            if batch and not self.cancelled:
                await self.batch(batch, dry)
            if not self.cancelled:
                await self.relink(dry)
        finally:
            if dry is not None:
                await dry.rollback()
                await dry.close()

    async def finish(self, status: str, error: str | None = None) -> dict[str, Any]:
        if error is not None:
            self.report.fail("import", "body", error)
        async with self.session() as session:
            await self._save(session, status=status, finished_at=utcnow())
            await drop_upload(session, self.job.id)
            job = (
                await session.execute(select(Import).where(Import.id == self.job.id))
            ).scalar_one()
            await session.refresh(job)
            public = import_public(job)
            if not self.job.dry_run and status != FAILED:
                await record_events(session, self.org.id, [(COMPLETED_EVENT, public)])
            await commit(session)
        self.log.end(status=status, items=self.report.items, **public["counts"])
        return public


async def run_import(
    engine: AsyncEngine,
    org_id: str,
    import_id: str,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any] | None:
    """Run a queued import (a message delivered twice runs it once); returns its report."""
    schema = await schema_of(engine, org_id)
    if schema is None:
        return None
    job = await claim_queued(engine, schema, Import, import_id)
    if job is None:
        return None  # another run has it (or had it): a message delivered twice
    run = Run(engine, await org_context(engine, org_id, job.actor), job)
    run.progress = progress
    run.log.start(bytes_total=job.size_bytes)
    try:
        await run.run()
    except MalformedUpload as exc:
        return await run.finish(FAILED, exc.message)
    except Exception:
        log.exception("import_failed", org_id=org_id, import_id=import_id)
        return await run.finish(FAILED, "the import stopped on an internal error")
    return await run.finish(CANCELLED if run.cancelled else SUCCEEDED)
