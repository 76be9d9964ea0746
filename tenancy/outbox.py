"""The transactional outbox: events are rows written in the same transaction as the change.

The relay (``tasks/relay.py``) moves them to Dramatiq after commit; nothing is lost if Redis
is down when the change commits, because the row stays until it has been fanned out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import BigInteger, DateTime, Identity, String, Table, func, insert
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import SharedBase
from tenancy.ids import new_id
from tenancy.queue import enqueue, get_broker
from tenancy.transactions import after_commit

# The relay actor (declared in ``tasks/relay.py``) and the flag that keeps one relay queued.
RELAY_ACTOR = "outbox.relay"
RELAY_FLAG_TTL_SECONDS = 10


def relay_pending_key(org_id: str) -> str:
    return f"faq:outbox-relay-pending:{org_id}"


def request_relay(org_id: str) -> None:
    """After a commit that wrote events: queue a relay for the org unless one is queued and
    not yet started. The relay clears the flag before it reads the outbox, so an event
    committed before a refused request is still seen by the queued relay. If the flag outlives
    a lost message, the periodic relay job moves the events meanwhile."""
    broker = get_broker()
    if broker.client.set(relay_pending_key(org_id), b"1", nx=True, ex=RELAY_FLAG_TTL_SECONDS):
        enqueue(RELAY_ACTOR, org_id)


class OutboxEvent(SharedBase):
    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    event_id: Mapped[str] = mapped_column(String(40), unique=True)
    org_id: Mapped[str] = mapped_column(String(40))
    event: Mapped[str] = mapped_column(String(40))
    data: Mapped[dict[str, Any]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


OUTBOX = cast(Table, OutboxEvent.__table__)


async def record_event(
    session: AsyncSession, org_id: str, event: str, data: dict[str, Any]
) -> None:
    """Write one event to the outbox inside the caller's transaction (see ``record_events``)."""
    await record_events(session, org_id, [(event, data)])


async def record_events(
    session: AsyncSession, org_id: str, events: list[tuple[str, dict[str, Any]]]
) -> None:
    """Write events, in order, to the outbox inside the caller's transaction (one statement);
    the relay for the org is queued to run after that transaction commits (never before)."""
    # A list of parameter sets: one round trip (insertmanyvalues), and unlike a multi-row
    # .values() the statement stays in SQLAlchemy's compiled cache.
    await session.execute(
        insert(OUTBOX),
        [
            {"event_id": new_id("evt"), "org_id": org_id, "event": event, "data": data}
            for event, data in events
        ],
    )

    after_commit(session, f"{RELAY_ACTOR}:{org_id}", lambda: request_relay(org_id))
