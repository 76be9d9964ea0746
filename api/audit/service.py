"""The organization's audit log (issue 17): a filtered page of it, newest first, and its
export, oldest first, read in keyset batches. No Quart: the routes call these.

The entries are written by the relay (``tasks/relay.py``) from the ``audit`` events of the
org's outbox; this module only reads them (and purges them past their retention).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Select, delete, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationFailed, field_error
from tenancy.audit import OrgAuditEntry
from tenancy.clock import iso
from tenancy.db import read_rows

EXPORT_BATCH = 500
COLUMNS = (
    OrgAuditEntry.id,
    OrgAuditEntry.resource,
    OrgAuditEntry.resource_id,
    OrgAuditEntry.action,
    OrgAuditEntry.actor,
    OrgAuditEntry.before,
    OrgAuditEntry.after,
    OrgAuditEntry.created_at,
)


def _bad_cursor() -> ValidationFailed:
    return ValidationFailed("The cursor is not valid.", details=field_error("cursor", "not valid"))


def entry_public(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "resource": row.resource,
        "resourceId": row.resource_id,
        "action": row.action,
        "actor": row.actor,
        "before": row.before,
        "after": row.after,
        "createdAt": iso(row.created_at),
    }


def check_window(since: datetime | None, until: datetime | None) -> None:
    """``since`` (inclusive) must not be after ``until`` (exclusive)."""
    if since is not None and until is not None and since > until:
        raise ValidationFailed(
            "since must not be after until.", details=field_error("since", "after until")
        )


def _filters(
    *,
    resource: str | None = None,
    resource_id: str | None = None,
    action: str | None = None,
    actor: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[ColumnElement[bool]]:
    check_window(since, until)
    found: list[ColumnElement[bool]] = []
    if resource is not None:
        found.append(OrgAuditEntry.resource == resource)
    if resource_id is not None:
        found.append(OrgAuditEntry.resource_id == resource_id)
    if action is not None:
        found.append(OrgAuditEntry.action == action)
    if actor is not None:
        found.append(OrgAuditEntry.actor_key == actor)
    if since is not None:
        found.append(OrgAuditEntry.created_at >= since)
    if until is not None:
        found.append(OrgAuditEntry.created_at < until)
    return found


def _cursor_key(after: list[Any]) -> tuple[datetime, str]:
    """The ``[createdAt, id]`` of a page's last entry (a cursor we signed)."""
    if len(after) != 2 or not all(isinstance(part, str) for part in after):
        raise _bad_cursor()
    try:
        return datetime.fromisoformat(after[0]), after[1]
    except ValueError:
        raise _bad_cursor() from None


async def list_entries(
    session: AsyncSession,
    *,
    limit: int,
    after: list[Any] | None,
    **filters: Any,
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """A page of the org's audit log, newest first (``created_at`` then ``id``, both
    descending); the sort key of the last entry when more follow."""
    stmt = select(*COLUMNS).where(*_filters(**filters))
    if after is not None:
        stmt = stmt.where(
            tuple_(OrgAuditEntry.created_at, OrgAuditEntry.id) < tuple_(*_cursor_key(after))
        )
    stmt = stmt.order_by(OrgAuditEntry.created_at.desc(), OrgAuditEntry.id.desc())
    rows = (await read_rows(session, stmt.limit(limit + 1))).all()
    items = [entry_public(r) for r in rows[:limit]]
    if len(rows) <= limit:
        return items, None
    last = rows[limit - 1]
    return items, [last.created_at.isoformat(), last.id]


def export_statement(**filters: Any) -> Select[Any]:
    """The export's entries, oldest first; checks the window (400 before anything streams)."""
    return (
        select(*COLUMNS)
        .where(*_filters(**filters))
        .order_by(OrgAuditEntry.created_at, OrgAuditEntry.id)
    )


async def export_lines(
    session: AsyncSession, stmt: Select[Any], batch: int = EXPORT_BATCH
) -> AsyncIterator[bytes]:
    """The entries of ``stmt`` as NDJSON, ``batch`` at a time: each batch is one read of its
    own (``read_rows``: no transaction held between batches), keyed on the last entry sent, so
    memory stays flat whatever the size of the log. Closes ``session`` at the end."""
    try:
        after: tuple[datetime, str] | None = None
        while True:
            page = stmt
            if after is not None:
                page = page.where(
                    tuple_(OrgAuditEntry.created_at, OrgAuditEntry.id) > tuple_(*after)
                )
            rows = (await read_rows(session, page.limit(batch))).all()
            if rows:
                yield b"".join(orjson.dumps(entry_public(r)) + b"\n" for r in rows)
            if len(rows) < batch:
                return
            after = (rows[-1].created_at, rows[-1].id)
    finally:
        await session.close()


async def purge_entries_batch(session: AsyncSession, created_before: datetime, limit: int) -> int:
    """Delete at most ``limit`` entries of the org's audit log created before
    ``created_before``, oldest first (by the ``(created_at, id)`` index). The caller commits;
    one batch, one short transaction."""
    doomed = (
        select(OrgAuditEntry.id)
        .where(OrgAuditEntry.created_at < created_before)
        .order_by(OrgAuditEntry.created_at, OrgAuditEntry.id)
        .limit(limit)
        .scalar_subquery()
    )
    deleted = await session.execute(
        delete(OrgAuditEntry).where(OrgAuditEntry.id.in_(doomed)).returning(OrgAuditEntry.id)
    )
    return len(deleted.all())
