"""``lastUsedAt`` of keys, off the request's critical path: a request notes its key
(``KeyUsage.seen``, a dict lookup); at most once a minute per key per process a background
task writes ``last_used_at`` (``tenancy.keys.touch_key``, which itself writes at most once a
minute per key whatever the number of processes). A failed write is logged and dropped: the
value is informative, never a reason to fail or slow a request."""

from __future__ import annotations

import asyncio
import time

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import shared_session
from tenancy.keys import touch_key

log = structlog.get_logger(__name__)

INTERVAL_SECONDS = 60.0
MAX_TRACKED = 100_000  # keys remembered per process (then forgotten all at once)
MAX_WRITES_IN_FLIGHT = 8  # past it a use is noted on a later request


class KeyUsage:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._noted: dict[str, float] = {}
        self._writes: set[asyncio.Task[None]] = set()

    def seen(self, fingerprint: str) -> None:
        now = time.monotonic()
        last = self._noted.get(fingerprint)
        if last is not None and now - last < INTERVAL_SECONDS:
            return
        if len(self._writes) >= MAX_WRITES_IN_FLIGHT:
            return
        if len(self._noted) >= MAX_TRACKED:
            self._noted.clear()
        self._noted[fingerprint] = now
        task = asyncio.get_running_loop().create_task(self._write(fingerprint))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write(self, fingerprint: str) -> None:
        try:
            async with shared_session(self._engine) as session, session.begin():
                await touch_key(session, fingerprint)
        except Exception:
            log.warning("key_last_used_not_recorded", fingerprint=fingerprint, exc_info=True)

    async def drain(self) -> None:
        """Wait for the writes in flight (tests, shutdown)."""
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
