"""Cancelling an import: a queued one at once, a running one after its current batch."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from api.imports.run import run_import
from tests.api.imports.helpers import all_questions, count_rows, upload
from tests.fixtures.orgs import OrgClient


async def test_a_queued_import_is_cancelled_at_once(org: OrgClient, engine: AsyncEngine) -> None:
    r = await upload(org, "csv", b"title,answer\nA,B\n")
    job = (await r.get_json())["data"]
    r = await org.post(f"/imports/{job['id']}/cancel")
    assert r.status_code == 200
    cancelled = (await r.get_json())["data"]
    assert cancelled["status"] == "cancelled" and cancelled["finishedAt"] is not None
    assert await run_import(engine, org.info.id, job["id"]) is None
    assert await all_questions(org) == []
    assert await count_rows(engine, org, "import_chunks") == 0


async def test_a_running_import_stops_after_its_batch(org: OrgClient, engine: AsyncEngine) -> None:
    rows = "".join(f"Question {n},Answer {n}\n" for n in range(1_000))
    r = await upload(org, "csv", ("title,answer\n" + rows).encode())
    job = (await r.get_json())["data"]
    running = asyncio.create_task(run_import(engine, org.info.id, job["id"]))
    while True:
        state = (await (await org.get(f"/imports/{job['id']}")).get_json())["data"]
        if state["status"] == "running" and state["progress"]["items"] > 0:
            break
        assert not running.done()
        await asyncio.sleep(0.02)
    r = await org.post(f"/imports/{job['id']}/cancel")
    assert r.status_code == 200
    report = await running
    assert report is not None and report["status"] == "cancelled"
    created = report["counts"]["created"]
    assert 0 < created < 1_000 and created == report["progress"]["items"]
    assert await count_rows(engine, org, "questions") == created
    assert await count_rows(engine, org, "import_chunks") == 0
