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
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.audit.conftest import audit_page
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient
from tests.fixtures.queues import wait_until_idle
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
    try:
        wait_until_idle()
        yield proc
    finally:
        proc.stop()


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
