"""Imports, the request's half: store the upload as it arrives, read it through once (in a
thread) so a malformed file is a 400 that leaves nothing behind, record the job and queue
``imports.run`` after the commit. Also the job's read and its cancel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ServiceError, field_error
from api.imports.context import ParseContext
from api.imports.formats import FORMATS
from api.imports.models import Import, ImportChunk
from api.imports.report import empty_counts, public_counts
from api.imports.upload import UploadReader, drop_upload, parse_in_thread, store_upload
from billing.plans import Plan, import_inflated_bytes
from tenancy.clock import iso, utcnow
from tenancy.ids import new_id
from tenancy.principal import Principal
from tenancy.queue import enqueue_after_commit

RUN_ACTOR = "imports.run"
QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "cancelled",
)
FINISHED = (SUCCEEDED, FAILED, CANCELLED)


class ImportNotFound(ServiceError):
    status = 404
    code = "import_not_found"
    message = "No such import in this organization."


class UnsupportedMediaType(ServiceError):
    status = 415
    code = "unsupported_media_type"
    message = "The upload's Content-Type does not match its format."


def import_public(row: Import) -> dict[str, Any]:
    counts, by_kind = public_counts(row.counts)
    return {
        "id": row.id,
        "format": row.format,
        "status": row.status,
        "dryRun": row.dry_run,
        "perQuestionEvents": bool(row.options.get("perQuestionEvents")),
        "counts": counts,
        "countsByKind": by_kind,
        "progress": {
            "items": row.progress.get("items", 0),
            "bytesRead": row.progress.get("bytesRead", 0),
            "bytesTotal": row.size_bytes,
        },
        "errors": row.errors,
        "warnings": row.notes,
        "createdAt": iso(row.created_at),
        "startedAt": iso(row.started_at) if row.started_at else None,
        "finishedAt": iso(row.finished_at) if row.finished_at else None,
    }


def session_fetcher(session: AsyncSession, import_id: str) -> Any:
    """Pieces read on the request's own session (its transaction wrote them)."""

    async def fetch(seq: int) -> bytes:
        data = (
            await session.execute(
                select(ImportChunk.data).where(
                    ImportChunk.import_id == import_id, ImportChunk.seq == seq
                )
            )
        ).scalar_one()
        return bytes(data)

    return fetch


async def create_import(
    session: AsyncSession,
    org: Principal,
    *,
    format_name: str,
    media_type: str,
    dry_run: bool,
    per_question_events: bool,
    body: AsyncIterator[bytes],
    limit: int,
) -> dict[str, Any]:
    fmt = FORMATS[format_name]
    if media_type not in fmt.media_types:
        accepted = ", ".join(sorted(fmt.media_types))
        raise UnsupportedMediaType(
            f"A {format_name} import is sent as {accepted}.",
            details=field_error("Content-Type", f"{media_type or 'none'} not accepted"),
        )
    import_id = new_id("imp")
    now = utcnow()
    row = Import(
        id=import_id,
        format=format_name,
        status=QUEUED,
        dry_run=dry_run,
        options={"perQuestionEvents": per_question_events},
        actor=org.actor,
        size_bytes=0,
        counts=empty_counts(),
        progress={"items": 0, "bytesRead": 0},
        errors=[],
        notes=[],
        cancel_requested=False,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    size = await store_upload(session, import_id, body, limit)
    reader = UploadReader(asyncio.get_running_loop(), session_fetcher(session, import_id), size)
    context = ParseContext(org.default_locale, import_inflated_bytes(Plan(org.plan)), convert=False)
    async for _item in parse_in_thread(reader, lambda file: fmt.parse(file, context)):
        pass  # a MalformedUpload raised here is the 400; the transaction rolls back
    await session.execute(update(Import).where(Import.id == import_id).values(size_bytes=size))
    row.size_bytes = size
    enqueue_after_commit(session, f"{RUN_ACTOR}:{import_id}", RUN_ACTOR, org.id, import_id)
    return import_public(row)


async def _load(session: AsyncSession, import_id: str, *, lock: bool = False) -> Import:
    stmt = select(Import).where(Import.id == import_id)
    if lock:
        stmt = stmt.with_for_update()
    row = (await session.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise ImportNotFound()
    return row


async def get_import(session: AsyncSession, import_id: str) -> dict[str, Any]:
    return import_public(await _load(session, import_id))


async def cancel_import(session: AsyncSession, import_id: str) -> dict[str, Any]:
    """A queued import is cancelled at once; a running one stops after its current batch
    (what earlier batches wrote stays); a finished one is left as it is."""
    row = await _load(session, import_id, lock=True)
    if row.status == QUEUED:
        row.status = CANCELLED
        row.finished_at = utcnow()
        await drop_upload(session, import_id)
    elif row.status == RUNNING:
        row.cancel_requested = True
    await session.flush()
    return import_public(row)
