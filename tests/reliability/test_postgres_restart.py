"""PostgreSQL restarted under write load: requests fail cleanly with 503 (never 500), no
change is half-applied, and the API answers again within seconds of recovery."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.categories.models import Category
from tenancy.audit import AuditEntry
from tenancy.db import tenant_session
from tenancy.outbox import OutboxEvent
from tenancy.transactions import commit as real_commit
from tests.fixtures.orgs import OrgClient
from tests.fixtures.services import Services


async def test_postgres_restart_under_write_load(
    org_factory: object, engine: AsyncEngine, services: Services
) -> None:
    from billing.plans import Plan

    org: OrgClient = await org_factory(Plan.ENTERPRISE)  # type: ignore[operator]
    results: list[tuple[str, int, str]] = []
    stop = asyncio.Event()

    async def writer(worker: int) -> None:
        n = 0
        while not stop.is_set():
            name = f"w{worker}-{n}"
            n += 1
            r = await org.post("/categories", json={"name": name}, scope="write")
            body = await r.get_json() if r.status_code >= 400 else {}
            code = body["error"]["code"] if body else ""
            results.append((name, r.status_code, code))
            await asyncio.sleep(0.01)

    writers = [asyncio.create_task(writer(i)) for i in range(4)]
    await asyncio.sleep(1.0)
    await asyncio.to_thread(services.postgres.stop, "fast")
    await asyncio.sleep(1.0)
    await asyncio.to_thread(services.postgres.start)
    restarted = time.monotonic()
    # Recovery: a write succeeds within seconds of PostgreSQL being back.
    recovered_after = None
    while time.monotonic() - restarted < 15:
        if any(s == 201 for _, s, _ in results[-4:]):
            recovered_after = time.monotonic() - restarted
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    stop.set()
    await asyncio.gather(*writers)

    statuses = Counter(s for _, s, _ in results)
    assert recovered_after is not None and recovered_after < 10, statuses
    assert set(statuses) <= {201, 503}, statuses
    assert statuses[503] > 0, "the outage was not observed"
    assert {c for _, s, c in results if s == 503} == {"service_unavailable"}

    async with tenant_session(engine, org.info.schema_name) as session:
        names = set(
            (
                await session.execute(select(Category.name).where(Category.deleted_at.is_(None)))
            ).scalars()
        )
        ids = set(
            (
                await session.execute(select(Category.id).where(Category.is_default.is_(False)))
            ).scalars()
        )
        audited = set(
            (
                await session.execute(
                    select(AuditEntry.resource_id).where(AuditEntry.action == "created")
                )
            ).scalars()
        )
    async with tenant_session(engine, org.info.schema_name) as session:
        evented = (
            await session.execute(
                select(func.count()).where(OutboxEvent.event == "category.created")
            )
        ).scalar_one()
    # Every acknowledged write is there; nothing exists without its audit entry and event.
    assert {n for n, s, _ in results if s == 201} <= names
    assert audited == ids
    assert evented == len(ids)


async def test_connection_lost_at_commit_is_a_503(
    org_factory: object, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one moment the load test above hits only by chance: PostgreSQL drops the request's
    connection right before COMMIT. The answer is a clean 503 in the error shape (the write
    is not acknowledged), and the next request works."""
    from billing.plans import Plan

    org: OrgClient = await org_factory(Plan.ENTERPRISE)  # type: ignore[operator]

    async def commit_on_a_dropped_connection(session: AsyncSession) -> None:
        pid = (await session.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        async with engine.connect() as other:
            await other.execute(
                text("SELECT pg_terminate_backend(CAST(:pid AS integer))"), {"pid": pid}
            )
        await real_commit(session)

    monkeypatch.setattr("api.http.binding.commit", commit_on_a_dropped_connection)
    r = await org.post("/categories", json={"name": "Lost at commit"}, scope="write")
    assert r.status_code == 503
    body = await r.get_json()
    assert body["error"]["code"] == "service_unavailable"
    assert r.headers["Retry-After"] == "1"
    assert "RateLimit-Limit" in r.headers

    monkeypatch.undo()
    r = await org.post("/categories", json={"name": "After the loss"}, scope="write")
    assert r.status_code == 201
    async with tenant_session(engine, org.info.schema_name) as session:
        names = set((await session.execute(select(Category.name))).scalars())
    assert "Lost at commit" not in names and "After the loss" in names
