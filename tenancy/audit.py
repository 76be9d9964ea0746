"""Audit logs.

- The category audit (``audit_log``, ``record_audit``): one entry per category mutation,
  written in the mutation's own transaction, so ``GET …/categories/audit`` reads its writes.
- The org's audit log (``audit_entries``): every mutation of every resource. A service records
  the change with ``audit_change`` as an ``audit`` event in the org's outbox, in the change's
  own transaction; the relay (``tasks/relay.py``) writes the entry (``audit_entry_rows``),
  keyed by the event's id, so an event relayed twice is one entry.
"""

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
from tenancy.outbox import record_events

Actor = dict[str, str]
SYSTEM_SCHEDULER: Actor = {"type": "system", "id": "scheduler"}
# Each org keeps at least its newest entries of each resource type, whatever their age: the
# audit endpoint promises the newest 100.
AUDIT_KEEP_NEWEST = 100


def api_key_actor(fingerprint: str) -> Actor:
    return {"type": "apiKey", "id": fingerprint}


def member_actor(member_id: str, fingerprint: str) -> Actor:
    """A change made with a key that belongs to a member (issue 30)."""
    return {"type": "member", "id": member_id, "keyFingerprint": fingerprint}


def system_actor(name: str) -> Actor:
    """A change made by the service itself: ``scheduler``, ``stripe``, ``cli``..."""
    return {"type": "system", "id": name}


# The outbox event of an audit record: internal, in no webhook's catalog, never delivered.
AUDIT_EVENT = "audit"
# The resources of the org's audit log (the ``resource`` filter of ``GET …/audit``).
AUDIT_RESOURCES = (
    "category",
    "question",
    "webhook",
    "key",
    "settings",
    "plan",
    "member",
    "audience",
)


def audit_payload(
    *,
    resource: str,
    resource_id: str | None,
    action: str,
    actor: Actor,
    before: Any,
    after: Any,
) -> dict[str, Any]:
    """The ``data`` of an ``audit`` outbox event. ``before``/``after`` as in the category
    audit: changed fields only for updates; ``None`` / the whole resource on create and
    delete. Never a secret: callers pass public shapes."""
    if resource not in AUDIT_RESOURCES:
        raise ValueError(f"unknown audit resource {resource!r}")
    return {
        "resource": resource,
        "resourceId": resource_id,
        "action": action,
        "actor": actor,
        "before": before,
        "after": after,
    }


async def audit_change(
    session: AsyncSession,
    org_id: str,
    *,
    resource: str,
    resource_id: str | None,
    action: str,
    actor: Actor,
    before: Any,
    after: Any,
) -> None:
    """Record a mutation for the org's audit log, in the caller's transaction (an ``audit``
    event of the org's outbox; the relay writes the entry)."""
    payload = audit_payload(
        resource=resource,
        resource_id=resource_id,
        action=action,
        actor=actor,
        before=before,
        after=after,
    )
    await record_events(session, org_id, [(AUDIT_EVENT, payload)])


async def audit_settings(
    session: AsyncSession, org_id: str, actor: Actor, before: Any, after: Any
) -> None:
    """A change of the org's settings (its fields, the workflow, synonyms, the lexicon's
    switches): an ``updated`` entry of resource ``settings`` with no ``resourceId``."""
    await audit_change(
        session,
        org_id,
        resource="settings",
        resource_id=None,
        action="updated",
        actor=actor,
        before=before,
        after=after,
    )


class OrgAuditEntry(TenantBase):
    """An entry of the org's audit log (written by the relay, read by ``GET …/audit``)."""

    __tablename__ = "audit_entries"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    resource: Mapped[str] = mapped_column(String(20))
    resource_id: Mapped[str | None] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(40))
    actor: Mapped[Actor] = mapped_column(JSONB)
    actor_key: Mapped[str] = mapped_column(String(40))
    before: Mapped[Any] = mapped_column(JSONB, nullable=True)
    after: Mapped[Any] = mapped_column(JSONB, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


def audit_entry_id(event_id: str) -> str:
    """The entry of an outbox event: one id per event, however often it is relayed."""
    return "aud_" + event_id.removeprefix("evt_")


def audit_entry_rows(events: list[tuple[str, dict[str, Any], datetime]]) -> list[dict[str, Any]]:
    """The ``audit_entries`` rows of relayed ``audit`` events ``(event_id, data, created_at)``
    (insert them with ``ON CONFLICT (id) DO NOTHING``)."""
    rows = []
    for event_id, data, created_at in events:
        actor = data["actor"]
        rows.append(
            {
                "id": audit_entry_id(event_id),
                "resource": data["resource"],
                "resource_id": data["resourceId"],
                "action": data["action"],
                "actor": actor,
                "actor_key": "system" if actor.get("type") == "system" else actor["id"],
                "before": data["before"],
                "after": data["after"],
                "created_at": created_at,
            }
        )
    return rows


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
