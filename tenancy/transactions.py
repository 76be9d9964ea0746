"""One owner per transaction: the owner commits with ``commit``; work queued with
``after_commit`` (Dramatiq messages) runs only once the commit succeeded: a coroutine function
on the event loop, a plain function (a synchronous Redis or broker call) in a thread."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

log = structlog.get_logger(__name__)

_KEY = "after_commit"
Callback = Callable[[], None] | Callable[[], Awaitable[None]]


def after_commit(session: AsyncSession, key: str, callback: Callback) -> None:
    """Run ``callback`` after this session's next successful commit (once per ``key``)."""
    session.info.setdefault(_KEY, {})[key] = callback


async def commit(session: AsyncSession) -> None:
    # A session that never began a transaction (a request served by ``read_rows`` alone) has
    # nothing to commit: no round trip, no greenlet, no session events.
    if session.in_transaction() or session.new or session.dirty or session.deleted:
        await session.commit()
    callbacks: dict[str, Callback] = session.info.pop(_KEY, {})
    for key, callback in callbacks.items():
        try:
            if inspect.iscoroutinefunction(callback):
                await callback()
            else:
                # Sends talk to Redis synchronously: keep them off the event loop.
                await asyncio.to_thread(callback)
        except Exception:
            # The outbox row is committed; the periodic relay sweep delivers it later.
            log.warning("after_commit_failed", task=key, exc_info=True)


_STATE = "faq.per_transaction"
T = TypeVar("T")


def per_transaction(session: AsyncSession, key: str, make: Callable[[], T]) -> T:
    """State that lasts as long as the session's current transaction (what it locked, a
    setting it read, work done once): ``make()`` on first use of ``key`` in a transaction,
    gone when another begins. A transaction not yet begun is its own: state kept after a
    statement began one belongs to that one."""
    transaction = session.sync_session.get_transaction()
    held: tuple[object, dict[str, Any]] | None = session.info.get(_STATE)
    if held is None or held[0] is not transaction:
        held = session.info[_STATE] = (transaction, {})
    state = held[1]
    if key not in state:
        state[key] = make()
    return cast(T, state[key])


def once_per_transaction(session: AsyncSession, key: str) -> bool:
    """True the first time ``key`` is seen in the session's current transaction: work whose
    effect lasts until that transaction ends (a row lock, a mark taken before the commit) is
    done once, not once per item."""
    seen = per_transaction(session, "once", set[str])
    if key in seen:
        return False
    seen.add(key)
    return True


def discard_after_commit(session: AsyncSession) -> None:
    session.info.pop(_KEY, None)
