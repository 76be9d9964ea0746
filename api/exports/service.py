"""Exports, the request's half: record the job and queue ``exports.run`` after the commit;
read it; stream its bundle, piece by piece, each piece read on its own (no transaction spans
the download)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.errors import ServiceError
from api.exports.models import Export, ExportChunk
from tenancy.clock import iso, utcnow
from tenancy.db import tenant_session
from tenancy.ids import new_id
from tenancy.principal import Principal
from tenancy.queue import enqueue_after_commit

RUN_ACTOR = "exports.run"
KEEP_HOURS = 24  # a bundle can be downloaded this long after it was made


class ExportNotFound(ServiceError):
    status = 404
    code = "export_not_found"
    message = "No such export in this organization."


class ExportNotReady(ServiceError):
    status = 409
    code = "export_not_ready"
    message = "The export has not succeeded (yet): see its status."


class ExportExpired(ServiceError):
    status = 410
    code = "export_expired"
    message = "The export's download expired; make a new export."


def export_public(row: Export, org_slug: str) -> dict[str, Any]:
    ready = row.status == "succeeded" and row.expires_at is not None
    if ready and row.expires_at is not None and row.expires_at <= utcnow():
        ready = False
    return {
        "id": row.id,
        "status": row.status,
        "includesRevisions": bool(row.options.get("revisions")),
        "counts": row.counts,
        "sizeBytes": row.size_bytes,
        "downloadUrl": f"/api/v1/{org_slug}/exports/{row.id}/download" if ready else None,
        "error": row.error,
        "createdAt": iso(row.created_at),
        "finishedAt": iso(row.finished_at) if row.finished_at else None,
        "expiresAt": iso(row.expires_at) if row.expires_at else None,
    }


async def create_export(session: AsyncSession, org: Principal, revisions: bool) -> dict[str, Any]:
    row = Export(
        id=new_id("exp"),
        status="queued",
        options={"revisions": revisions},
        actor=org.actor,
        counts={},
        size_bytes=0,
        created_at=utcnow(),
    )
    # Bundles past their time go when a new one is asked for (storage stays bounded).
    expired = select(Export.id).where(Export.expires_at <= utcnow())
    await session.execute(delete(ExportChunk).where(ExportChunk.export_id.in_(expired)))
    session.add(row)
    await session.flush()
    enqueue_after_commit(session, f"{RUN_ACTOR}:{row.id}", RUN_ACTOR, org.id, row.id)
    return export_public(row, org.slug)


async def _load(session: AsyncSession, export_id: str) -> Export:
    row = (await session.execute(select(Export).where(Export.id == export_id))).scalar_one_or_none()
    if row is None:
        raise ExportNotFound()
    return row


async def get_export(session: AsyncSession, org: Principal, export_id: str) -> dict[str, Any]:
    return export_public(await _load(session, export_id), org.slug)


async def download_plan(session: AsyncSession, export_id: str) -> int:
    """The number of pieces of a downloadable bundle; else 409 or 410 (an expired bundle's
    pieces are removed then)."""
    row = await _load(session, export_id)
    if row.status != "succeeded":
        raise ExportNotReady()
    if row.expires_at is None or row.expires_at <= utcnow():
        raise ExportExpired()
    pieces = (
        await session.execute(
            select(ExportChunk.seq)
            .where(ExportChunk.export_id == export_id)
            .order_by(ExportChunk.seq.desc())
            .limit(1)
        )
    ).scalar_one_or_none()
    return 0 if pieces is None else pieces + 1


async def bundle_pieces(
    engine: AsyncEngine, schema: str, export_id: str, pieces: int
) -> AsyncIterator[bytes]:
    for seq in range(pieces):
        async with tenant_session(engine, schema) as session:
            data = (
                await session.execute(
                    select(ExportChunk.data).where(
                        ExportChunk.export_id == export_id, ExportChunk.seq == seq
                    )
                )
            ).scalar_one()
            await session.rollback()
        yield bytes(data)
