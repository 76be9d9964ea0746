"""A per-org cap on the requests in progress in one API process (``FAQ_ORG_MAX_INFLIGHT``).

The per-minute rate limit bounds what an org sends over a minute, not what it holds at once:
one org pacing at its plan's rate with a few dozen requests in flight would take most of a
process (its event loop and its database connections) from every other org. Each request of
an org that reaches the database (past the rate limit and the response cache: a cached read
takes none) takes a weight in its org's budget (``api.http.binding``): a read
weighs 1, a write (POST, PUT, PATCH, DELETE) ``WRITE_WEIGHT``, since writes hold a
connection and a transaction longer. A request that does not fit waits in its org's FIFO
for at most ``QUEUE_WAIT_SECONDS`` (a burst of a normal client is delayed, not refused), then
gets 429 ``rate_limited`` with ``Retry-After: 1``; past ``QUEUE_LIMIT`` waiters it gets the 429
at once. Waiting, not refusing at once, is what protects the other orgs: a waiter costs no CPU
and no connection, and it slows a client that does not honour ``Retry-After``; an immediate 429
answered at a few hundred a second cost the process more than the requests it refused
(measured with bench.noisy, see docs/reliability.md). The weight goes back in the
request's teardown, whatever ended it (an error, a client gone, a cancellation).

Only the process's own event loop touches the counters (no lock needed); each app has its own
(``for_app``), so a test app with a small cap does not share counters with another app.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WRITE_WEIGHT = 2
QUEUE_WAIT_SECONDS = 2.0
QUEUE_LIMIT = 64  # waiters per org per process; past it, 429 at once
EXTENSION = "org_inflight"


def weight_of(method: str) -> int:
    return WRITE_WEIGHT if method.upper() in WRITE_METHODS else 1


@dataclass
class _Waiter:
    weight: int
    future: asyncio.Future[None]


@dataclass
class _OrgBudget:
    used: int = 0
    waiters: deque[_Waiter] = field(default_factory=deque)


@dataclass(frozen=True)
class Slot:
    """A weight taken from one org's budget; give it back with ``OrgInflight.release``."""

    org_id: Any
    weight: int


class OrgInflight:
    """The budgets of every org in this process; ``cap`` 0 turns the cap off."""

    def __init__(self, cap: int, wait_seconds: float = QUEUE_WAIT_SECONDS) -> None:
        self.cap = cap
        self.wait_seconds = wait_seconds
        self._orgs: dict[Any, _OrgBudget] = {}

    def in_use(self, org_id: Any) -> int:
        budget = self._orgs.get(org_id)
        return budget.used if budget is not None else 0

    async def acquire(self, org_id: Any, method: str) -> Slot | None:
        """The slot, or None when the org's budget stayed full (the caller answers 429)."""
        if self.cap <= 0:
            return Slot(org_id, 0)
        weight = min(weight_of(method), self.cap)  # a write always fits an empty budget
        budget = self._orgs.setdefault(org_id, _OrgBudget())
        if not budget.waiters and budget.used + weight <= self.cap:
            budget.used += weight
            return Slot(org_id, weight)
        if self.wait_seconds <= 0 or len(budget.waiters) >= QUEUE_LIMIT:
            return None
        waiter = _Waiter(weight, asyncio.get_running_loop().create_future())
        budget.waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.future), self.wait_seconds)
        except BaseException as error:  # the wait ran out, or the request was cancelled
            if waiter.future.done() and not waiter.future.cancelled():
                # Granted just as the wait ended: give it back.
                self._give_back(org_id, budget, weight)
            else:
                waiter.future.cancel()
                _remove(budget.waiters, waiter)
                self._wake(budget)
                self._forget_if_idle(org_id, budget)
            if isinstance(error, TimeoutError):
                return None
            raise
        return Slot(org_id, weight)

    def release(self, slot: Slot) -> None:
        if slot.weight <= 0:
            return
        budget = self._orgs.get(slot.org_id)
        if budget is not None:
            self._give_back(slot.org_id, budget, slot.weight)

    def _give_back(self, org_id: Any, budget: _OrgBudget, weight: int) -> None:
        budget.used = max(0, budget.used - weight)
        self._wake(budget)
        self._forget_if_idle(org_id, budget)

    def _wake(self, budget: _OrgBudget) -> None:
        """Grants the waiters at the head of the FIFO while they fit (in order, no overtaking)."""
        while budget.waiters and budget.used + budget.waiters[0].weight <= self.cap:
            waiter = budget.waiters.popleft()
            if waiter.future.done():
                continue
            budget.used += waiter.weight
            waiter.future.set_result(None)

    def _forget_if_idle(self, org_id: Any, budget: _OrgBudget) -> None:
        if budget.used == 0 and not budget.waiters:
            self._orgs.pop(org_id, None)


def _remove(waiters: deque[_Waiter], waiter: _Waiter) -> None:
    with contextlib.suppress(ValueError):
        waiters.remove(waiter)


def for_app(extensions: dict[str, Any]) -> OrgInflight:
    """The app's budgets, made on first use (``FAQ_ORG_MAX_INFLIGHT`` of its settings)."""
    found = extensions.get(EXTENSION)
    if found is None:
        found = extensions[EXTENSION] = OrgInflight(extensions["settings"].faq_org_max_inflight)
    assert isinstance(found, OrgInflight)
    return found
