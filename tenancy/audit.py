"""The audit log: one entry per mutation, written in the mutation's own transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, String, insert, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.clock import utcnow
from tenancy.db import TenantBase
from tenancy.ids import new_id

Actor = dict[str, str]
SYSTEM_SCHEDULER: Actor = {"type": "system", "id": "scheduler"}


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
