"""The transactional outbox: events are rows written in the same transaction as the change,
in the org's own schema (``outbox``), so that transaction touches one schema (one Citus node).

The relay (``tasks/relay.py``) moves them to Dramatiq after commit; nothing is lost if Redis
is down when the change commits, because the row stays until it has been fanned out. The
periodic relay finds the orgs with events through ``shared.outbox_pending``: the org is marked
there by its own short statement, on a connection of its own, before the tenant transaction
commits (idempotent; a marker whose transaction rolled back costs the relay one empty check).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from functools import partial
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    DateTime,
    Identity,
    Insert,
    String,
    Table,
    bindparam,
    func,
    insert,
    select,
    text,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import SERVER_SETTINGS, SharedBase, TenantBase
from tenancy.ids import new_id
from tenancy.loop_resources import per_loop
from tenancy.queue import enqueue
from tenancy.redis import loop_client
from tenancy.transactions import after_commit, once_per_transaction

# The relay actor (declared in ``tasks/relay.py``) and the flag that keeps one relay queued.
RELAY_ACTOR = "outbox.relay"
RELAY_FLAG_TTL_SECONDS = 10


def relay_pending_key(org_id: str) -> str:
    return f"faq:outbox-relay-pending:{org_id}"


async def request_relay(org_id: str) -> None:
    """After a commit that wrote events: queue a relay for the org unless one is queued and
    not yet started. The relay clears the flag before it reads the outbox, so an event
    committed before a refused request is still seen by the queued relay. If the flag outlives
    a lost message, the periodic relay job moves the events meanwhile.

    The flag is one asynchronous round trip on the event loop; only when it was not set does
    the broker's synchronous enqueue run, in a thread (under a burst of one org's writes the
    flag is set: no thread, no broker call)."""
    if await loop_client().set(relay_pending_key(org_id), b"1", nx=True, ex=RELAY_FLAG_TTL_SECONDS):
        await asyncio.to_thread(enqueue, RELAY_ACTOR, org_id)


class OutboxEvent(TenantBase):
    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    event_id: Mapped[str] = mapped_column(String(40), unique=True)
    event: Mapped[str] = mapped_column(String(40))
    data: Mapped[dict[str, Any]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


OUTBOX = cast(Table, OutboxEvent.__table__)


class PendingOrg(SharedBase):
    """An org whose outbox may hold events (``since``: when it was marked)."""

    __tablename__ = "outbox_pending"

    org_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


PENDING = cast(Table, PendingOrg.__table__)

_MARK = text(
    "INSERT INTO shared.outbox_pending (org_id) VALUES (:org_id) ON CONFLICT (org_id) DO NOTHING"
)
_CLEAR = text("DELETE FROM shared.outbox_pending WHERE org_id = :org_id")
MARKER_POOL_SIZE = 2
MARKER_MAX_OVERFLOW = 8
MARKER_LOCK_TIMEOUT = "5s"


def _engine_of(bind: Any) -> AsyncEngine:
    return cast(AsyncEngine, bind.engine if isinstance(bind, AsyncConnection) else bind)


async def _dispose(engine: AsyncEngine) -> None:
    await engine.dispose()


def _marker_engine(engine: AsyncEngine) -> AsyncEngine:
    """A small autocommit pool of its own per database and loop: a request holding its tenant
    connection never waits for a second connection of the pool it holds one of."""
    url = engine.url
    return per_loop(
        f"outbox_marker:{url.render_as_string(hide_password=True)}",
        lambda: create_async_engine(
            url,
            isolation_level="AUTOCOMMIT",
            pool_size=MARKER_POOL_SIZE,
            max_overflow=MARKER_MAX_OVERFLOW,
            pool_recycle=engine.pool._recycle,  # type: ignore[attr-defined]
            pool_pre_ping=False,
            hide_parameters=True,
            # A marker waits for no lock for long: a transaction holding FOR UPDATE on its
            # org's row (the marker's foreign key takes KEY SHARE on it) while it records
            # events would otherwise wait for this connection forever, unseen by PostgreSQL's
            # deadlock detector (the two sides meet in the application).
            connect_args={
                "server_settings": {**SERVER_SETTINGS, "lock_timeout": MARKER_LOCK_TIMEOUT}
            },
        ),
        _dispose,
    )


async def mark_pending(engine: AsyncEngine, org_id: str) -> None:
    """Mark the org in ``shared.outbox_pending``, committed at once (one round trip, outside
    any tenant transaction)."""
    async with _marker_engine(engine).connect() as conn:
        await conn.execute(_MARK, {"org_id": org_id})


async def clear_pending(engine: AsyncEngine, org_id: str) -> None:
    """Remove the org's mark (the relay, after it saw the org's outbox empty), at once."""
    async with _marker_engine(engine).connect() as conn:
        await conn.execute(_CLEAR, {"org_id": org_id})


async def record_event(
    session: AsyncSession, org_id: str, event: str, data: dict[str, Any]
) -> None:
    """Write one event to the outbox inside the caller's transaction (see ``record_events``)."""
    await record_events(session, org_id, [(event, data)])


async def record_events(
    session: AsyncSession, org_id: str, events: list[tuple[str, dict[str, Any]]]
) -> None:
    """Write events, in order, to the org's outbox inside the caller's transaction (one
    statement), then mark the org pending outside it (before it commits: a crash after the
    commit never strands the events); the relay for the org is queued to run after that
    transaction commits (never before). The insert comes first: it holds the outbox's ROW
    EXCLUSIVE lock until commit, which the relay's re-check waits for (``tasks/relay.py``)."""
    # A list of parameter sets: one round trip (insertmanyvalues), and unlike a multi-row
    # .values() the statement stays in SQLAlchemy's compiled cache.
    await session.execute(
        insert(OUTBOX),
        [{"event_id": new_id("evt"), "event": event, "data": data} for event, data in events],
    )
    await events_written(session, org_id)


def outbox_insert_when(count: int, condition: ColumnElement[bool]) -> Insert:
    """The INSERT of ``count`` events (in order; values: ``outbox_parameters``) into the org's
    outbox, of no row unless ``condition`` holds: a writer folds it into its own statement as
    a CTE (``WITH q AS (INSERT ... RETURNING ...), e AS (<this, condition: EXISTS (SELECT
    FROM q)>) ...``), so the change and its events take one round trip; built once, it runs
    with new parameters each time. The writer then calls ``events_written`` (when the
    statement wrote them), exactly as ``record_events`` does."""
    rows = [
        select(
            bindparam(f"outbox_event_id_{n}", type_=String(40)).label("event_id"),
            bindparam(f"outbox_event_{n}", type_=String(40)).label("event"),
            bindparam(f"outbox_data_{n}", type_=JSONB).label("data"),
        ).where(condition)
        for n in range(count)
    ]
    source = rows[0] if len(rows) == 1 else union_all(*rows)
    return insert(OUTBOX).from_select(["event_id", "event", "data"], source)


def outbox_parameters(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The parameters of ``outbox_insert_when(len(events), ...)`` for ``events``."""
    params: dict[str, Any] = {}
    for n, (event, data) in enumerate(events):
        params[f"outbox_event_id_{n}"] = new_id("evt")
        params[f"outbox_event_{n}"] = event
        params[f"outbox_data_{n}"] = data
    return params


async def events_written(session: AsyncSession, org_id: str) -> None:
    """After events were inserted in the session's transaction: mark the org pending (once
    per transaction, before it commits) and queue the relay for after its commit."""
    # Once per transaction: its first insert holds the outbox's lock until commit, so a
    # relay clearing the mark after this re-checks behind every later insert too.
    if once_per_transaction(session, f"outbox-mark:{org_id}"):
        await mark_pending(_engine_of(session.bind), org_id)

    after_commit(session, f"{RELAY_ACTOR}:{org_id}", partial(request_relay, org_id))
