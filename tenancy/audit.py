"""The audit log: one entry per mutation, written in the mutation's own transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, String, delete, insert, select, tuple_
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.clock import utcnow
from tenancy.db import TenantBase
from tenancy.ids import new_id

Actor = dict[str, str]
SYSTEM_SCHEDULER: Actor = {"type": "system", "id": "scheduler"}
# Each org keeps at least its newest entries of each resource type, whatever their age: the
# audit endpoint promises the newest 100.
AUDIT_KEEP_NEWEST = 100


def api_key_actor(fingerprint: str) -> Actor:
    return {"type": "apiKey", "id": fingerprint}


class AuditEntry(TenantBase):
    __tablename__ = "audit_log"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    resource_type: Mapped[str] = mapped_column(String(20))
    resource_id: Mapped[str | None] = mapped_column(String(40))
    action: Mapped[str] = mapped_column(String(20))
    actor: Mapped[Actor] = mapped_column(JSONB)
    before: Mapped[Any] = mapped_column(JSONB, nullable=True)
    after: Mapped[Any] = mapped_column(JSONB, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


async def record_audit(
    session: AsyncSession,
    *,
    resource_type: str,
    resource_id: str | None,
    action: str,
    actor: Actor,
    before: Any,
    after: Any,
) -> None:
    await session.execute(
        insert(AuditEntry).values(
            id=new_id("aud"),
            resource_type=resource_type,
            resource_id=resource_id,
            action=action,
            actor=actor,
            before=before,
            after=after,
            created_at=utcnow(),
        )
    )


async def latest_entries(session: AsyncSession, resource_type: str, limit: int) -> list[AuditEntry]:
    rows = await session.execute(
        select(AuditEntry)
        .where(AuditEntry.resource_type == resource_type)
        .order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc())
        .limit(limit)
    )
    return list(rows.scalars())


async def purge_audit_batch(session: AsyncSession, created_before: datetime, limit: int) -> int:
    """Delete at most ``limit`` entries created before ``created_before`` that are not among
    the newest ``AUDIT_KEEP_NEWEST`` of their resource type (oldest first, by the
    ``(resource_type, created_at, id)`` index). The caller commits; one batch, one short
    transaction."""
    kinds = (await session.execute(select(AuditEntry.resource_type).distinct())).scalars().all()
    for kind in kinds:
        boundary = (
            await session.execute(
                select(AuditEntry.created_at, AuditEntry.id)
                .where(AuditEntry.resource_type == kind)
                .order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc())
                .offset(AUDIT_KEEP_NEWEST - 1)
                .limit(1)
            )
        ).one_or_none()
        if boundary is None:
            continue
        doomed = (
            select(AuditEntry.id)
            .where(
                AuditEntry.resource_type == kind,
                AuditEntry.created_at < created_before,
                tuple_(AuditEntry.created_at, AuditEntry.id)
                < tuple_(boundary.created_at, boundary.id),
            )
            .order_by(AuditEntry.created_at, AuditEntry.id)
            .limit(limit)
            .scalar_subquery()
        )
        deleted = (
            await session.execute(
                delete(AuditEntry).where(AuditEntry.id.in_(doomed)).returning(AuditEntry.id)
            )
        ).all()
        if deleted:
            return len(deleted)
    return 0
