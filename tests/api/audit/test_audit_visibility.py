"""An entry of the org's audit log is visible within 2 s of the change's response (issue 17),
with the real worker relaying the outbox (no test helper moves it)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.queue import NAMESPACE
from tenancy.settings import get_settings
from tests.api.audit.conftest import audit_page
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import WORKER_ENV, Process
from tests.fixtures.services import Services

pytestmark = pytest.mark.serial

VISIBLE_WITHIN = 2.0
POLL = 0.05


@pytest.fixture(scope="module")
def worker(services: Services) -> Iterator[Process]:
    """``faq worker`` (1 process, 8 threads) on the test services, for this module only."""
    env = {**os.environ, **WORKER_ENV}
    proc = Process(
        "worker",
        [sys.executable, "-m", "tasks.cli", "worker", "--processes", "1", "--threads", "8"],
        env,
        services.root / "audit-visibility-worker.log",
    )
    proc.start(ready="Worker process is ready")
    wait_until_idle()
    yield proc
    proc.stop()


def wait_until_idle(timeout: float = 60) -> None:
    """Until the worker has taken every message earlier tests left queued (a sweep of every
    org they made) and finished them: the promise is about a worker that is not busy."""
    client = redis.Redis.from_url(get_settings().require_redis_url())
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            busy = 0
            # Dramatiq's keys: ``<ns>:<queue>.msgs`` (the messages of a queue, its list of
            # ids due now is ``<ns>:<queue>``), ``<ns>:__acks__.*`` (taken, not finished).
            for key in client.scan_iter(f"{NAMESPACE}:__acks__.*"):
                busy += client.scard(key)
            for key in client.scan_iter(f"{NAMESPACE}:*.msgs"):
                busy += client.llen(key.removesuffix(b".msgs"))
            if busy == 0:
                return
            time.sleep(0.2)
    finally:
        client.close()
    raise RuntimeError("the worker did not finish the queued messages")


async def entry_ids(org: OrgClient, **query: Any) -> list[str]:
    """The ids of the entries ``GET /audit`` lists for ``query`` (its filters)."""
    return [e["id"] for e in (await audit_page(org, **query))["data"]]


async def seconds_until_visible(org: OrgClient, **query: Any) -> float:
    """Poll every 50 ms from now (the change's response is in) until one entry matches;
    the seconds it took (at most a bounded 5 s of polling)."""
    start = time.monotonic()
    while time.monotonic() - start < 5:
        if await entry_ids(org, **query):
            return time.monotonic() - start
        await asyncio.sleep(POLL)
    raise AssertionError(f"no entry {query} within 5 s")


async def test_entries_are_visible_within_two_seconds_of_the_response(
    engine: AsyncEngine, org: OrgClient, worker: Process
) -> None:
    q = await create(org, title="Seen soon")
    took = [await seconds_until_visible(org, resourceId=q["id"], action="created")]
    r = await org.patch(f"/questions/{q['id']}", json={"title": "Seen soon, edited"})
    assert r.status_code == 200
    took.append(await seconds_until_visible(org, resourceId=q["id"], action="updated"))
    r = await org.delete(f"/questions/{q['id']}", scope="write")
    assert r.status_code == 204
    took.append(await seconds_until_visible(org, resourceId=q["id"], action="deleted"))
    print(f"audit entry visible after (s): {[round(t, 3) for t in took]}")
    assert max(took) < VISIBLE_WITHIN, took
    assert len(await entry_ids(org, resourceId=q["id"])) == 3
