"""The real thing (issue 28): a ``faq worker`` process relays the outbox after a request
commits and embeds the question; nothing waits for it on the request. An import, run by the
worker, is embedded the same way, with no backfill (issue 40)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers.embedder import WORDLLAMA_MODEL
from tenancy.db import tenant_session
from tests.api.answers.test_answers import answers, titles
from tests.api.imports.helpers import all_questions, fixture, upload
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient
from tests.fixtures.queues import wait_until_idle
from tests.fixtures.receiver import WORKER_ENV, Process
from tests.fixtures.services import Services


@pytest.fixture(scope="module")
def worker(services: Services) -> Iterator[Process]:
    folder = services.root / "embeddings-worker"
    folder.mkdir(exist_ok=True)
    env = {**os.environ, **WORKER_ENV}
    process = Process(
        "worker",
        [sys.executable, "-m", "tasks.cli", "worker", "--processes", "1", "--threads", "2"],
        env,
        folder / "worker.log",
    )
    process.start(ready="Worker process is ready")
    try:
        # Earlier tests of this session wrote questions with no worker running: their
        # embeddings are relayed now, and this test's own would wait behind them.
        wait_until_idle()
        yield process
    finally:
        process.kill()


async def embeddings_of(engine: AsyncEngine, org: OrgClient) -> dict[str, str]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(
            text("SELECT question_id, content_hash FROM question_embeddings WHERE model = :m"),
            {"m": WORDLLAMA_MODEL},
        )
        return {row.question_id: row.content_hash for row in rows}


async def eventually(
    engine: AsyncEngine, org: OrgClient, check: object, timeout: float = 60
) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        rows = await embeddings_of(engine, org)
        if check(rows):  # type: ignore[operator]
            return rows
        if time.monotonic() > deadline:
            raise AssertionError(f"embeddings not as expected in time: {rows}")
        await asyncio.sleep(0.2)


async def test_the_worker_embeds_after_commit_and_follows_changes(
    worker: Process, engine: AsyncEngine, org: OrgClient
) -> None:
    q = await create(org, title="What is your refund policy?", answer="Paid within 30 days.")
    first = await eventually(engine, org, lambda rows: q["id"] in rows)
    r = await org.patch(f"/questions/{q['id']}", json={"answer": "Paid within 14 days."})
    assert r.status_code == 200
    await eventually(engine, org, lambda rows: rows.get(q["id"]) not in (None, first[q["id"]]))
    assert (await org.delete(f"/questions/{q['id']}")).status_code == 204
    await eventually(engine, org, lambda rows: q["id"] not in rows)


async def test_the_worker_embeds_an_import_and_answers_find_it_by_meaning(
    worker: Process, engine: AsyncEngine, org: OrgClient
) -> None:
    r = await upload(org, "zendesk", fixture("zendesk.json"))
    assert r.status_code == 202, await r.get_data()
    job = (await r.get_json())["data"]
    deadline = time.monotonic() + 60
    while job["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        await asyncio.sleep(0.2)
        job = (await (await org.get(f"/imports/{job['id']}")).get_json())["data"]
    assert job["status"] == "succeeded", job
    made = {q["id"] for q in await all_questions(org)}
    assert len(made) == 2
    await eventually(engine, org, lambda rows: set(rows) == made)
    _, body = await answers(org, q="how can I make a payment")
    assert titles(body) == ["How do I pay?"]


def worker_processes(worker: Process) -> list[Any]:
    """The ``faq worker`` command's Dramatiq processes (psutil), not the processes an import
    starts (its converters, niced themselves: ``multiprocessing`` children)."""
    import psutil

    assert worker.popen is not None
    found = []
    for process in psutil.Process(worker.popen.pid).children(recursive=True):
        try:
            if not any("multiprocessing" in part for part in process.cmdline()):
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found


def worker_threads(worker: Process) -> list[tuple[int, int, float]]:
    """Every thread of the worker's processes: (thread id, niceness, CPU seconds)."""
    found = []
    for process in worker_processes(worker):
        for thread in process.threads():
            try:
                nice = os.getpriority(os.PRIO_PROCESS, thread.id)
            except OSError:  # gone since
                continue
            found.append((thread.id, nice, thread.user_time + thread.system_time))
    return found


async def test_the_worker_embeds_at_a_lower_priority_than_the_rest(
    worker: Process, engine: AsyncEngine, org: OrgClient
) -> None:
    """The models' CPU work runs in threads that yield the CPU to requests (niceness 10);
    the worker's processes themselves (their main threads: the relay, the deliveries) keep
    theirs."""
    from tenancy.priority import NICENESS

    before = {tid: cpu for tid, nice, cpu in worker_threads(worker) if nice >= NICENESS}
    made = [
        (await create(org, title=f"How do I export report {n}?", answer="From Reports. " * 40))[
            "id"
        ]
        for n in range(30)
    ]
    await eventually(engine, org, lambda rows: set(made) <= set(rows))
    threads = worker_threads(worker)
    mains = {process.pid for process in worker_processes(worker)}
    assert mains and all(nice == 0 for tid, nice, _ in threads if tid in mains), threads
    low = {tid: cpu for tid, nice, cpu in threads if nice >= NICENESS}
    spent = sum(cpu - before.get(tid, 0.0) for tid, cpu in low.items())
    assert low and spent > 0, (threads, before)  # CPU time counts in ticks of 10 ms
