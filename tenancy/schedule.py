"""Earliest due time per org: one small shared table per kind of due work.

A sweep that must visit orgs with something due (the publish sweep, the delivery re-drive)
keeps each org's earliest due time in a shared table, never later than the real one: every
write that makes work due lowers it (``mark_due``), and the sweep recomputes it exactly when
it visits the org (``reset_due``). So one indexed query finds the due orgs, however many orgs
there are.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, delete, func, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column


class DueSchedule:
    """Mixin for a shared table of ``(org_id, next_due_at)``."""

    org_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    next_due_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


async def mark_due(
    session: AsyncSession, schedule: type[DueSchedule], org_id: str, due: datetime
) -> None:
    """Keep the org's next due time at most ``due``, in the caller's transaction."""
    table = schedule.__table__  # type: ignore[attr-defined]
    stmt = insert(table).values(org_id=org_id, next_due_at=due)
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=[table.c.org_id],
            set_={"next_due_at": func.least(table.c.next_due_at, stmt.excluded.next_due_at)},
        )
    )


async def reset_due(
    session: AsyncSession, schedule: type[DueSchedule], org_id: str, due: datetime | None
) -> None:
    """After a sweep visited the org: its exact next due time, or no row when nothing is due."""
    table = schedule.__table__  # type: ignore[attr-defined]
    if due is None:
        await session.execute(delete(table).where(table.c.org_id == org_id))
    else:
        await session.execute(update(table).where(table.c.org_id == org_id).values(next_due_at=due))
