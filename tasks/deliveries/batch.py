"""Group commit of the delivery bookkeeping: one transaction for the waiting sends of an org.

Sends to an org's webhooks run side by side on the worker's event loop (one message per
webhook; a fan-out of ten webhooks makes ten). Each needs a transaction to record its last
wave and claim the next (``store.record_wave``, ``store.claim_wave``). Here the requests of
every send to one org's schema that are waiting meanwhile go into one transaction: their
records in one ``record_wave`` (the successes in one statement) and their claims in one
``claim_wave`` (one statement), one commit. One such transaction per org and event loop runs
at a time; requests made while it runs go into the next one (no added wait when idle).

A failure fails every request of that transaction (nothing of it committed); each caller
then takes the careful way on its own (``engine._Send.record_and_claim``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from tasks.deliveries.attempts import Claim, Outcome
from tasks.deliveries.store import claim_wave, record_wave, unclaim
from tenancy.settings import Settings
from tenancy.transactions import commit

Result = tuple[dict[str, str], list[Claim]]
SessionFactory = Callable[[], AbstractAsyncContextManager[AsyncSession]]


@dataclass
class _Request:
    done: list[tuple[Claim, Outcome]]
    wave: list[str]
    future: asyncio.Future[Result]


@dataclass
class OrgBookkeeping:
    """The waiting requests of one org's sends on this loop, and the transaction running."""

    org_id: str
    waiting: list[_Request] = field(default_factory=list)
    running: asyncio.Task[None] | None = None

    async def submit(
        self,
        session: SessionFactory,
        settings: Settings,
        done: list[tuple[Claim, Outcome]],
        wave: list[str],
    ) -> Result:
        """Record ``done`` and claim ``wave`` in the next transaction of this org; returns
        what was recorded (per delivery) and the claims of ``wave`` (in its order)."""
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self.waiting.append(_Request(done, wave, future))
        if self.running is None:
            self.running = asyncio.create_task(self._run(session, settings))
        return await future

    async def _run(self, session: SessionFactory, settings: Settings) -> None:
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, []
                await _one_transaction(self.org_id, session, settings, batch)
        finally:
            self.running = None
            left, self.waiting = self.waiting, []
            for request in left:  # only when this task was cancelled
                if not request.future.done():
                    request.future.set_exception(asyncio.CancelledError())


async def _one_transaction(
    org_id: str, session: SessionFactory, settings: Settings, batch: list[_Request]
) -> None:
    done = [pair for request in batch for pair in request.done]
    wave = [i for request in batch for i in request.wave]
    try:
        async with session() as db:
            recorded = await record_wave(db, done, settings) if done else {}
            claims = await claim_wave(db, org_id, wave, settings) if wave else []
            await commit(db)
    except BaseException as exc:
        for request in batch:
            if not request.future.done():
                request.future.set_exception(_copy(exc))
        if not isinstance(exc, Exception):
            raise
        return
    by_id = {claim.delivery_id: claim for claim in claims}
    orphans: list[Claim] = []
    for request in batch:
        if request.future.done():  # its caller was cancelled meanwhile: give its claims back
            orphans.extend(by_id[i] for i in request.wave if i in by_id)
            continue
        mine = {c.delivery_id for c, _ in request.done}
        request.future.set_result(
            (
                {k: v for k, v in recorded.items() if k in mine},
                [by_id[i] for i in request.wave if i in by_id],
            )
        )
    if orphans:
        async with session() as db:
            await unclaim(db, orphans)
            await commit(db)


def _copy(exc: BaseException) -> BaseException:
    """The failure for each waiting caller (a fresh error naming the original)."""
    if isinstance(exc, asyncio.CancelledError):
        return asyncio.CancelledError()
    error = RuntimeError(f"delivery bookkeeping failed: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error
