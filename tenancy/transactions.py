"""One owner per transaction: the owner commits with ``commit``; work queued with
``after_commit`` (Dramatiq messages) runs only once the commit succeeded: a coroutine function
on the event loop, a plain function (a synchronous Redis or broker call) in a thread."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

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


_ONCE = "once_per_transaction"


def once_per_transaction(session: AsyncSession, key: str) -> bool:
    """True the first time ``key`` is seen in the session's current transaction: work whose
    effect lasts until that transaction ends (a row lock, a mark taken before the commit) is
    done once, not once per item."""
    transaction = session.sync_session.get_transaction()
    seen: tuple[object, set[str]] | None = session.info.get(_ONCE)
    if seen is None or seen[0] is not transaction:
        seen = (transaction, set())
        session.info[_ONCE] = seen
    if key in seen[1]:
        return False
    seen[1].add(key)
    return True


def discard_after_commit(session: AsyncSession) -> None:
    session.info.pop(_KEY, None)
