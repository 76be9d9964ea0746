"""The organization's audit log (issue 17): a filtered page of it, newest first, and its
export, oldest first, read in batches bounded by entries and by bytes (issue 26: one entry can
hold two 100,000-character answers). No Quart: the routes call these.

The entries are written by the relay (``tasks/relay.py``) from the ``audit`` events of the
org's outbox; this module only reads them (and purges them past their retention).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    String,
    Text,
    any_,
    bindparam,
    cast,
    delete,
    func,
    select,
    tuple_,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationFailed, field_error
from tenancy.audit import OrgAuditEntry
from tenancy.clock import iso
from tenancy.db import read_rows

EXPORT_BATCH = 500  # entries of one export read, at most
# The text PostgreSQL measures for one planning read, about: a log of huge entries is planned
# a few at a time (each size is its JSON turned into text), so no read runs for long.
EXPORT_PLAN_BYTES = 32 * 2**20
EXPORT_FIRST_PLAN = 50  # entries planned first, before their sizes are known
EXPORT_BATCH_BYTES = 2 * 2**20  # their NDJSON, at most (an entry larger is a batch of its own)
# An entry's line beyond its columns' text: the keys, quotes and commas, ``createdAt``.
LINE_OVERHEAD = 160
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


def export_filters(**filters: Any) -> list[ColumnElement[bool]]:
    """The export's filters; checks the window (400 before anything streams)."""
    return _filters(**filters)


def _text_octets(column: Any) -> ColumnElement[int]:
    return func.coalesce(func.octet_length(cast(column, Text)), 0)


# An upper bound of an entry's line in bytes, by PostgreSQL (jsonb's text has a space after
# each ':' and ',' that orjson leaves out; both escape the same characters).
_LINE_OCTETS = (
    LINE_OVERHEAD
    + _text_octets(OrgAuditEntry.id)
    + _text_octets(OrgAuditEntry.resource)
    + _text_octets(OrgAuditEntry.resource_id)
    + _text_octets(OrgAuditEntry.action)
    + _text_octets(OrgAuditEntry.actor)
    + _text_octets(OrgAuditEntry.before)
    + _text_octets(OrgAuditEntry.after)
)
_BY_IDS = (
    select(*COLUMNS)
    .where(OrgAuditEntry.id == any_(bindparam("ids", type_=ARRAY(String))))
    .order_by(OrgAuditEntry.created_at, OrgAuditEntry.id)
)


def _groups(planned: Sequence[Any], budget: int) -> list[list[str]]:
    """The ids of ``planned`` (rows of ``id``, ``size``, in order) cut into consecutive groups
    of at most ``budget`` bytes each (an entry larger than that alone)."""
    groups: list[list[str]] = []
    used = budget
    for row in planned:
        if used + row.size > budget:
            groups.append([])
            used = 0
        groups[-1].append(row.id)
        used += row.size
    return groups


def next_plan_limit(planned: Sequence[Any]) -> int:
    """How many entries the next planning read measures: as many as ``EXPORT_PLAN_BYTES``
    holds at the sizes just seen (at least 1, at most ``EXPORT_BATCH``)."""
    average: int = max(1, sum(int(row.size) for row in planned) // max(1, len(planned)))
    return max(1, min(EXPORT_BATCH, EXPORT_PLAN_BYTES // average))


async def export_lines(
    session: AsyncSession, filters: list[ColumnElement[bool]]
) -> AsyncIterator[bytes]:
    """The entries matching ``filters`` as NDJSON, oldest first, one batch at a time.

    Each step reads the keys and sizes (measured by PostgreSQL, which never sends the text
    for it) of the next entries, keyed on the last entry planned (``EXPORT_FIRST_PLAN``, then
    as many as ``EXPORT_PLAN_BYTES`` holds at the sizes seen, at most ``EXPORT_BATCH``: a log
    of huge entries is measured a few at a time, so no read runs for long); then the
    entries themselves by id, in groups of at most ``EXPORT_BATCH_BYTES``, each group one
    chunk of the body. Every read is one of its own (``read_rows``: no transaction held
    between them), and entries never change once written, so a size read is the size sent:
    memory stays flat whatever the log holds. Closes ``session`` at the end."""
    try:
        after: tuple[datetime, str] | None = None
        plan = select(OrgAuditEntry.id, OrgAuditEntry.created_at, _LINE_OCTETS.label("size")).where(
            *filters
        )
        limit = EXPORT_FIRST_PLAN
        while True:
            page = plan
            if after is not None:
                page = page.where(
                    tuple_(OrgAuditEntry.created_at, OrgAuditEntry.id) > tuple_(*after)
                )
            page = page.order_by(OrgAuditEntry.created_at, OrgAuditEntry.id).limit(limit)
            planned = (await read_rows(session, page)).all()
            for ids in _groups(planned, EXPORT_BATCH_BYTES):
                rows = (await read_rows(session, _BY_IDS, {"ids": ids})).all()
                if rows:  # purged meanwhile: nothing to send
                    yield b"".join(orjson.dumps(entry_public(r)) + b"\n" for r in rows)
            if len(planned) < limit:
                return
            after = (planned[-1].created_at, planned[-1].id)
            limit = next_plan_limit(planned)
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
