"""Sending one webhook's deliveries: slots, waves, records, and sends that outlast a message.

``deliver_many`` (``deliver`` for one) is what the send actors run. The message takes as
many of the webhook's in-flight slots as it can use (``throttle.py``) and sends in waves of
that size: each wave claimed (``store.claim_wave``, else ``store.claim_one`` per row), sent
concurrently (``transport.attempt``) and recorded (``store.record_wave``). Behind a receiver
that answers quickly, the record of one wave and the claim of the next share one transaction,
run while the wave between them is in flight. This module owns every transaction of the
delivery paths: the store never commits.

- One message per process sends to a webhook at a time: other messages for it hand their ids
  over to it (its inbox) and return. When the inbox grows past the wave, the send takes more
  of the webhook's slots free now (``_Send._widen``), up to the limit.
- Behind a quick receiver, the transaction overlapped with a wave claims WAVES_PER_CLAIM
  waves (and records those sent since the last one).
- Without a slot the deliveries come back later (``policy.busy_delay``), the rows moved when
  the wait is long enough for the re-drive to notice them.
- A message stops taking waves after BATCH_HOLD_SECONDS (the rest is queued again at once),
  QUICK_HOLD_SECONDS later behind a receiver that answers quickly (``hold_until``).
- ``run_detaching``: a send still waiting on its receiver after DETACH_AFTER_SECONDS finishes
  on the event loop while its message returns, so a receiver that times out holds no worker
  thread. Closing the loop's resources waits for these sends (up to
  ``policy.shutdown_wait_seconds``) before their HTTP session and Redis client close.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import redis.asyncio as aioredis
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.webhooks.dispatch import enqueue_busy, enqueue_deliveries
from tasks.deliveries.attempts import Claim, Outcome
from tasks.deliveries.batch import OrgBookkeeping
from tasks.deliveries.policy import (
    BATCH_HOLD_SECONDS,
    BUSY_RETRY_SECONDS,
    DETACH_AFTER_SECONDS,
    QUICK_HOLD_SECONDS,
    QUICK_WAVE_SECONDS,
    WAVES_PER_CLAIM,
    busy_delay,
    lease_seconds,
    shutdown_wait_seconds,
)
from tasks.deliveries.store import claim_one, postpone_due, record_wave, unclaim
from tasks.deliveries.throttle import (
    acquire_slots,
    local_slot,
    release_local,
    release_slots,
    take_local,
)
from tasks.deliveries.transport import attempt, http_session
from tenancy.db import tenant_session
from tenancy.loop_resources import per_loop
from tenancy.orgs import org_schema
from tenancy.redis import loop_client
from tenancy.settings import Settings, get_settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)

DB_GATE_DEFAULT = 5  # sessions at once when the engine's pool does not say its size


# ---- this event loop's state -------------------------------------------------------------


@dataclass
class _LoopState:
    # Per webhook: the deliveries still to send by the message sending to it now.
    inboxes: dict[str, list[str]] = field(default_factory=dict)
    # Per engine: how many delivery sessions may be open at once.
    db_gates: dict[int, asyncio.Semaphore] = field(default_factory=dict)
    # Sends still running after their message returned (a slow receiver).
    detached: set[asyncio.Future[Any]] = field(default_factory=set)
    # Per engine and org schema: the bookkeeping of its sends, one transaction for all waiting.
    bookkeeping: dict[tuple[int, str], OrgBookkeeping] = field(default_factory=dict)


def _new_state() -> _LoopState:
    # Made after the HTTP session and the Redis client (made here first if need be): closing
    # the loop's resources, newest first, lets detached sends finish before those close. The
    # engine is older still: the actors make it before the first send.
    http_session(get_settings())
    loop_client()
    return _LoopState()


async def _wait_detached(state: _LoopState) -> None:
    """Shutdown: let detached sends finish (their attempts recorded) before clients close."""
    if state.detached:
        await asyncio.wait(set(state.detached), timeout=shutdown_wait_seconds(get_settings()))


def _state() -> _LoopState:
    return per_loop("deliveries.engine", _new_state, _wait_detached)


def hold_until(deadline: float, quick: bool) -> float:
    """When a send stops taking waves: BATCH_HOLD_SECONDS after it started, or behind a
    receiver answering quickly (``quick``) QUICK_HOLD_SECONDS more; such a send has left its
    message's thread by then (``run_detaching``) and goes on from the event loop, where
    handing its inbox back to the queue would only cost a message per batch."""
    return deadline + (QUICK_HOLD_SECONDS if quick else 0.0)


# ---- one message's sends to one webhook ----------------------------------------------------


@dataclass
class _Send:
    """A message's work on one webhook, with the loop's state and clients it uses, taken when
    it starts: a send that outlasts its message looks none of them up again (while the loop's
    resources close, a lookup would make new ones)."""

    engine: AsyncEngine
    schema: str
    org_id: str
    webhook_id: str
    settings: Settings
    loop: _LoopState
    http: aiohttp.ClientSession
    redis: aioredis.Redis

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A tenant session for the delivery paths, at most as many at once as the engine's
        pool holds: more would open (and close again) an overflow connection per transaction,
        which costs far more than waiting a moment for a pooled one."""
        gates = self.loop.db_gates
        gate = gates.get(id(self.engine))
        if gate is None:
            size = getattr(self.engine.pool, "size", lambda: DB_GATE_DEFAULT)()
            gate = gates[id(self.engine)] = asyncio.Semaphore(max(int(size) - 1, 1))
        async with gate, tenant_session(self.engine, self.schema) as session:
            yield session

    def bookkeeping(self) -> OrgBookkeeping:
        key = (id(self.engine), self.schema)
        held = self.loop.bookkeeping.get(key)
        if held is None:
            held = self.loop.bookkeeping[key] = OrgBookkeeping(self.org_id)
        return held

    async def record(self, done: list[tuple[Claim, Outcome]]) -> dict[str, str]:
        """Record a wave's attempts (with those of the org's other sends waiting meanwhile, in
        one transaction; alone if that fails)."""
        try:
            recorded, _ = await self.bookkeeping().submit(self.session, self.settings, done, [])
        except Exception:
            log.warning("delivery_bookkeeping_batch_failed", exc_info=True)
            return await self.record_alone(done)
        return recorded

    async def record_alone(self, done: list[tuple[Claim, Outcome]]) -> dict[str, str]:
        """Record a wave's attempts in a transaction of its own."""
        async with self.session() as session:
            results = await record_wave(session, done, self.settings)
            await commit(session)
        return results

    async def record_and_claim(
        self, done: list[tuple[Claim, Outcome]], wave: list[str]
    ) -> tuple[dict[str, str], list[Claim]]:
        """One transaction (shared with the org's other sends waiting meanwhile): record the
        previous wave's attempts, then claim the next wave. Rows the common claim leaves out
        go the careful way, one transaction each."""
        try:
            recorded, claims = await self.bookkeeping().submit(
                self.session, self.settings, done, wave
            )
        except Exception:
            if done:  # the claim failed: the records must not go with it
                await self.record_alone(done)
            raise
        claimed = {c.delivery_id for c in claims}
        for delivery_id in wave:
            if delivery_id not in claimed:
                async with self.session() as session:
                    claim = await claim_one(session, self.org_id, delivery_id, self.settings)
                    await commit(session)
                if claim is not None:
                    claims.append(claim)
        return recorded, claims

    async def unclaim(self, claims: list[Claim]) -> None:
        async with self.session() as session:
            await unclaim(session, claims)
            await commit(session)

    async def busy(self, delivery_ids: list[str], busy: int) -> list[str]:
        """No slot: postpone the due ones and send them again later; returns those postponed."""
        delay = busy_delay(busy)
        args = (self.org_id, self.webhook_id)
        if delay < BUSY_RETRY_SECONDS:
            # A short wait: no need to move the rows (the re-drive looks a minute back).
            await asyncio.to_thread(enqueue_busy, *args, delivery_ids, busy + 1, delay)
            return delivery_ids
        log.debug(
            "deliveries_busy", webhook_id=self.webhook_id, deliveries=len(delivery_ids), busy=busy
        )
        async with self.session() as session:
            moved = await postpone_due(session, delivery_ids, delay)
            await commit(session)
        if moved:
            await asyncio.to_thread(enqueue_busy, *args, moved, busy + 1, delay)
        return moved

    async def attempt_all(self, claims: list[Claim]) -> list[tuple[Claim, Outcome]]:
        if not claims:
            return []
        if len(claims) == 1:
            return [(claims[0], await attempt(claims[0], self.settings, self.http))]
        outcomes = await asyncio.gather(*(attempt(c, self.settings, self.http) for c in claims))
        return list(zip(claims, outcomes, strict=True))

    def close_inbox(self, inbox: list[str]) -> None:
        """No more additions to ``inbox`` (if it is still the webhook's)."""
        if self.loop.inboxes.get(self.webhook_id) is inbox:
            del self.loop.inboxes[self.webhook_id]

    async def next_wave(
        self, remaining: list[str], size: int, done: list[tuple[Claim, Outcome]]
    ) -> tuple[dict[str, str], list[Claim]]:
        """Take the next wave off ``remaining``: record ``done`` and claim it (one transaction).
        Returns what happened (``not-due`` for the wave's ids the claim left) and the claims."""
        wave = remaining[:size]
        del remaining[:size]
        recorded, claims = await self.record_and_claim(done, wave)
        return {**dict.fromkeys(wave, "not-due"), **recorded}, claims

    async def _widen(
        self,
        local: asyncio.Semaphore,
        remaining: list[str],
        size: int,
        limit: int,
        held: list[str],
    ) -> int:
        """Take more of the webhook's slots free now (this process's, then Redis's), up to
        what ``remaining`` beyond the wave needs; adds them to ``held``, returns how many."""
        wanted = min(limit - size, len(remaining) - size)
        more = 0
        while more < wanted and not local.locked():
            await local.acquire()  # free: returns at once
            more += 1
        if not more:
            return 0
        candidates = [f"{i}:{secrets.token_hex(4)}" for i in remaining[size : size + more]]
        try:
            granted = await acquire_slots(
                self.redis, self.webhook_id, candidates, lease_seconds(self.settings)
            )
        except Exception:
            # Redis failing now: go on with the slots held (their leases stand).
            log.warning("webhook_slots_not_widened", webhook_id=self.webhook_id, exc_info=True)
            release_local(local, more)
            return 0
        held.extend(candidates[:granted])
        release_local(local, more - granted)
        return granted

    async def run(self, remaining: list[str], busy: int) -> dict[str, str]:
        """The body of ``deliver_many`` for the one message sending to the webhook in this
        process; ``remaining`` is its inbox: other messages for the webhook add to it
        meanwhile."""
        results: dict[str, str] = {}
        limit = self.settings.faq_webhook_max_in_flight
        local = local_slot(self.webhook_id, limit)
        deadline = time.monotonic() + BATCH_HOLD_SECONDS
        taken = await take_local(local, min(len(remaining), limit))
        held: list[str] = []
        done: list[tuple[Claim, Outcome]] = []  # attempted, not recorded yet
        claims: list[Claim] = []  # claimed, not sent yet
        try:
            if taken:
                candidates = [f"{i}:{secrets.token_hex(4)}" for i in remaining[:taken]]
                lease = lease_seconds(self.settings)
                granted = await acquire_slots(self.redis, self.webhook_id, candidates, lease)
                held = candidates[:granted]
            if not held:
                self.close_inbox(remaining)
                bounced = list(remaining)
                moved = await self.busy(bounced, busy)
                results.update(dict.fromkeys(bounced, "not-due"))
                results.update(dict.fromkeys(moved, "busy"))
                return results
            if granted < taken:  # fewer across processes: give back the permits not needed
                release_local(local, taken - granted)
                taken = granted
            size = len(held)
            quick = False  # the last wave came back within QUICK_WAVE_SECONDS
            while True:
                if len(remaining) > size and size < limit and not local.locked():
                    # The inbox grew past the wave (handed-over deliveries): widen the wave
                    # with the slots free now rather than sending the rest one at a time.
                    more = await self._widen(local, remaining, size, limit, held)
                    taken += more
                    size += more
                if not claims:
                    if not remaining or time.monotonic() >= hold_until(deadline, quick):
                        break
                    pending, done = done, []
                    recorded, claims = await self.next_wave(remaining, size, pending)
                    results.update(recorded)
                    continue
                sending, claims = claims[:size], claims[size:]
                posts = asyncio.ensure_future(self.attempt_all(sending))
                sent_at = time.monotonic()
                try:
                    # Only behind a receiver that answered the last wave quickly: a lease taken
                    # now must not wait out a slow wave (nor this message hold its thread).
                    if remaining and not claims and quick and sent_at < hold_until(deadline, quick):
                        # Overlapped with the wave in flight: record the last, claim the next
                        # WAVES_PER_CLAIM waves (one transaction for that many waves).
                        pending, done = done, []
                        ahead = size * WAVES_PER_CLAIM
                        recorded, claims = await self.next_wave(remaining, ahead, pending)
                        results.update(recorded)
                    elif done and not claims:
                        pending, done = done, []
                        results.update(await self.record(pending))
                    # Else a wave claimed ahead is next: ``done`` waits for its transaction.
                finally:
                    # Whatever happened meanwhile, the wave in flight is awaited (and recorded).
                    done = done + await posts
                    quick = time.monotonic() - sent_at < QUICK_WAVE_SECONDS
        finally:
            self.close_inbox(remaining)  # no more additions: what is left is sent again below
            await release_slots(self.redis, self.webhook_id, held)
            release_local(local, taken)
            try:
                if claims:
                    await self.unclaim(claims)
            finally:
                if done:
                    results.update(await self.record(done))
        if remaining:
            # Held the thread long enough (a slow receiver): the rest waits in the queue, at
            # once.
            left = list(remaining)
            pairs = [(i, self.webhook_id) for i in left]
            await asyncio.to_thread(enqueue_deliveries, self.org_id, pairs)
            results.update(dict.fromkeys(left, "requeued"))
        return results


async def deliver_many(
    engine: AsyncEngine,
    org_id: str,
    webhook_id: str,
    delivery_ids: list[str],
    *,
    busy: int = 0,
) -> dict[str, str]:
    """Attempt deliveries of one webhook that are pending and due. This message takes as many
    of the webhook's in-flight slots as it can use (``FAQ_WEBHOOK_MAX_IN_FLIGHT``, in this
    process and across processes) and sends in waves of that size: each wave claimed in one
    statement and sent concurrently; while a wave is in flight, one transaction records the
    previous wave and claims the next. Returns what happened to each. Deliveries without a
    slot are postponed and sent again later in one message; those left when this message has
    held its thread for BATCH_HOLD_SECONDS go back to the queue at once. While one message
    sends to a webhook, other messages for it in this process hand it their deliveries and
    return (instead of waiting for a slot or bouncing through the queue)."""
    schema = await org_schema(engine, org_id)
    if schema is None:
        return dict.fromkeys(delivery_ids, "unknown-org")
    loop = _state()
    inbox = loop.inboxes.get(webhook_id)
    if inbox is not None:
        # This process is sending to the webhook right now: add these to its list (a message
        # lost with the process leaves the rows due: the re-drive sends them).
        known = set(inbox)
        inbox.extend(i for i in dict.fromkeys(delivery_ids) if i not in known)
        return dict.fromkeys(delivery_ids, "handed-over")
    remaining = list(dict.fromkeys(delivery_ids))
    loop.inboxes[webhook_id] = remaining
    settings = get_settings()
    send = _Send(
        engine, schema, org_id, webhook_id, settings, loop, http_session(settings), loop_client()
    )
    try:
        return await send.run(remaining, busy)
    finally:
        send.close_inbox(remaining)


async def deliver(engine: AsyncEngine, org_id: str, delivery_id: str, webhook_id: str) -> str:
    """Make one attempt of a delivery if it is pending and due; returns what happened."""
    results = await deliver_many(engine, org_id, webhook_id, [delivery_id])
    return results.get(delivery_id, "not-due")


# ---- sends that outlast their message ------------------------------------------------------


def _log_detached(detached: set[asyncio.Future[Any]], task: asyncio.Future[Any]) -> None:
    detached.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("detached_delivery_failed", exc_info=task.exception())


async def run_detaching(work: Coroutine[Any, Any, Any]) -> None:
    """Run ``work``; if it is still waiting on a receiver after DETACH_AFTER_SECONDS, let it
    finish on the event loop and return, so a receiver that times out holds no worker thread
    (threads bound how many messages run at once). At least once still holds: the rows are
    the truth, and what a killed worker leaves (leased or due) is re-driven."""
    task = asyncio.ensure_future(work)
    finished, _ = await asyncio.wait({task}, timeout=DETACH_AFTER_SECONDS)
    if finished:
        task.result()
        return
    detached = _state().detached
    detached.add(task)
    task.add_done_callback(functools.partial(_log_detached, detached))
