"""On a real Citus cluster only (``make test-citus`` runs this folder first, on a fresh cluster;
``tests/citus/conftest.py`` leaves it out of ``make test``): ``citus_rebalance_start()`` moves a
whole org schema from one worker to the other while the service keeps answering reads and
writes of both orgs, and nothing of either is lost. The move blocks writes of the schema
moving while it copies (``block_writes``: the cluster runs with ``wal_level = replica``; with
``logical`` on every node Citus moves it without blocking); a write waits, then succeeds."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import tenant_session
from tests.api.questions.helpers import default_category
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

WORKERS = (9701, 9702)
REBALANCE_SECONDS = 180  # the bound of the whole move; the traffic stops with it


async def node_of(engine: AsyncEngine, schema: str) -> set[int]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT DISTINCT nodeport FROM pg_catalog.citus_shards"
                " WHERE table_name::text LIKE :prefix"
            ),
            {"prefix": f"{schema}.%"},
        )
        return set(rows.scalars())


async def admin(engine: AsyncEngine, sql: str, **params: object) -> object:
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        return (await conn.execute(text(sql), params)).scalar()


async def traffic(org: OrgClient, stop: asyncio.Event, seen: Counter[str]) -> int:
    """Writes and reads of one org until ``stop``: returns how many questions it created."""
    created, category = 0, await default_category(org)
    while not stop.is_set():
        body = {"title": f"During the move {created}?", "answer": "Yes.", "status": "draft"}
        body["categoryId"] = category
        r = await org.post("/questions", json=body, scope="write")
        problem = "" if r.status_code == 201 else f" {await r.get_data(as_text=True)}"
        seen[f"create {r.status_code}{problem[:300]}"] += 1
        created += r.status_code == 201
        r = await org.get("/questions", query={"limit": 5}, scope="read")
        seen[f"list {r.status_code}"] += 1
        await asyncio.sleep(0.05)
    return created


async def test_rebalance_moves_an_org_while_both_keep_answering(
    engine: AsyncEngine, org_factory: OrgFactory
) -> None:
    orgs = [await org_factory(), await org_factory()]
    # Both org schemas on the first worker (whatever Citus chose at creation).
    for org in orgs:
        if await node_of(engine, org.info.schema_name) != {WORKERS[0]}:
            await admin(
                engine,
                "SELECT citus_schema_move(CAST(:s AS regnamespace), CAST('127.0.0.1' AS text),"
                " CAST(:port AS integer), shard_transfer_mode => 'block_writes')",
                s=org.info.schema_name,
                port=WORKERS[0],
            )
        assert await node_of(engine, org.info.schema_name) == {WORKERS[0]}

    stop = asyncio.Event()
    seen: Counter[str] = Counter()
    runners = [asyncio.create_task(traffic(org, stop, seen)) for org in orgs]
    await asyncio.sleep(1)  # traffic before the move, too
    job = await admin(engine, "SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')")
    assert job is not None
    deadline = time.monotonic() + REBALANCE_SECONDS
    while time.monotonic() < deadline:
        state = await admin(
            engine, "SELECT state FROM pg_dist_background_job WHERE job_id = :j", j=job
        )
        if state in ("finished", "failed", "cancelled"):
            break
        await asyncio.sleep(0.5)
    await asyncio.sleep(1)  # traffic after the move, too
    stop.set()
    created = await asyncio.gather(*runners)

    assert state == "finished", state
    placements = [await node_of(engine, org.info.schema_name) for org in orgs]
    assert sorted(p for placement in placements for p in placement) == sorted(WORKERS)
    assert set(seen) == {"create 201", "list 200"}, seen
    for org, made in zip(orgs, created, strict=True):
        assert made > 0
        async with tenant_session(engine, org.info.schema_name) as session:
            stored = await session.scalar(text("SELECT count(*) FROM questions"))
        assert stored == made
