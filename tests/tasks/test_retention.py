"""Retention of delivery history and of the audit log: the daily ``purge-history`` job removes
deliveries (their attempts live in the row) older than FAQ_DELIVERY_RETENTION_DAYS (30) and audit
entries older than FAQ_AUDIT_RETENTION_DAYS (365) past each org's newest 100, in bounded
batches, one org at a time; an org that fails does not stop the others."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Delivery, Webhook
from tenancy.audit import AuditEntry, OrgAuditEntry
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tenancy.ids import new_id
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HOOK = {"url": "https://127.0.0.1:9/hook", "events": ["category.created"]}


async def run_job(name: str) -> dict[str, Any]:
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tasks.cli", "jobs", "run", name],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert printed["job"] == name
    result: dict[str, Any] = printed["result"]
    return result


async def webhook_with_pings(org: OrgClient, pings: int) -> tuple[str, list[str]]:
    r = await org.post("/webhooks", json=HOOK)
    assert r.status_code == 201, await r.get_data()
    hook_id = (await r.get_json())["data"]["id"]
    ids = []
    for _ in range(pings):
        r = await org.post(f"/webhooks/{hook_id}/test")
        assert r.status_code == 202
        ids.append((await r.get_json())["data"]["id"])
    return hook_id, ids


async def listed_deliveries(org: OrgClient, hook_id: str) -> list[str]:
    ids: list[str] = []
    query: dict[str, Any] = {"limit": 100}
    while True:
        r = await org.get(f"/webhooks/{hook_id}/deliveries", query=query, scope="read")
        assert r.status_code == 200
        body = await r.get_json()
        ids += [d["id"] for d in body["data"]]
        if not body["meta"]["pagination"]["hasMore"]:
            return ids
        query = {"limit": 100, "cursor": body["meta"]["pagination"]["cursor"]}


async def age_deliveries(engine: AsyncEngine, org: OrgClient, ids: list[str], days: int) -> None:
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            update(Delivery)
            .where(Delivery.id.in_(ids))
            .values(created_at=utcnow() - timedelta(days=days), status="failed")
        )


async def copies_of(
    engine: AsyncEngine, org: OrgClient, delivery_id: str, n: int, days: int
) -> None:
    """``n`` old copies of a delivery (as a busy org's month of history would leave)."""
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        source = (
            await session.execute(select(Delivery).where(Delivery.id == delivery_id))
        ).scalar_one()
        at = utcnow() - timedelta(days=days)
        rows = [
            {
                c.key: getattr(source, c.key)
                for c in Delivery.__table__.columns
                if c.key not in ("id", "created_at", "updated_at")
            }
            | {"id": new_id("dlv"), "created_at": at, "updated_at": at, "status": "failed"}
            for _ in range(n)
        ]
        await session.execute(insert(Delivery), rows)


async def audit_rows(engine: AsyncEngine, org: OrgClient, n: int, days: int) -> None:
    now = utcnow()
    rows = [
        {
            "id": new_id("aud"),
            "resource_type": "category",
            "resource_id": new_id("cat"),
            "action": "created",
            "actor": {"type": "apiKey", "id": "old"},
            "before": None,
            "after": {"name": f"old {i}"},
            # distinct times, older ones first
            "created_at": now - timedelta(days=days, seconds=n - i),
        }
        for i in range(n)
    ]
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(insert(AuditEntry), rows)


async def audit_count(engine: AsyncEngine, org: OrgClient) -> int:
    async with tenant_session(engine, org.info.schema_name) as session:
        n = await session.scalar(select(func.count()).select_from(AuditEntry))
    return int(n or 0)


async def audit_page(org: OrgClient) -> list[dict[str, Any]]:
    r = await org.get("/categories/audit", scope="admin")
    assert r.status_code == 200, await r.get_data()
    data: list[dict[str, Any]] = (await r.get_json())["data"]
    return data


async def test_deliveries_older_than_30_days_are_purged_in_batches(
    engine: AsyncEngine, org: OrgClient
) -> None:
    hook_id, ids = await webhook_with_pings(org, 4)
    old, recent = ids[:2], ids[2:]
    await age_deliveries(engine, org, old, 31)
    await age_deliveries(engine, org, [recent[0]], 29)
    await copies_of(engine, org, old[0], 2_500, 40)  # more than two batches
    assert len(await listed_deliveries(org, hook_id)) == 2_504

    result = await run_job("purge-history")
    assert result["deliveries"] >= 2_502 and result["failed"] == 0
    assert sorted(await listed_deliveries(org, hook_id)) == sorted(recent)
    r = await org.get(f"/webhooks/{hook_id}/deliveries/{old[0]}", scope="read")
    assert r.status_code == 404
    # deliveryCount counts deliveries created, purged ones included.
    got = (await (await org.get(f"/webhooks/{hook_id}", scope="read")).get_json())["data"]
    assert got["deliveryCount"] == 4


async def test_a_webhook_deleted_long_ago_goes_with_its_last_delivery(
    engine: AsyncEngine, org: OrgClient
) -> None:
    hook_id, ids = await webhook_with_pings(org, 1)
    assert (await org.delete(f"/webhooks/{hook_id}")).status_code == 204
    await age_deliveries(engine, org, ids, 31)
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            update(Webhook)
            .where(Webhook.id == hook_id)
            .values(deleted_at=utcnow() - timedelta(days=31))
        )
    result = await run_job("purge-history")
    assert result["webhooks"] >= 1
    async with tenant_session(engine, org.info.schema_name) as session:
        left = await session.scalar(
            select(func.count()).select_from(Webhook).where(Webhook.id == hook_id)
        )
    assert left == 0


async def test_audit_keeps_a_year_and_always_the_newest_100(
    engine: AsyncEngine, org_factory: Any
) -> None:
    few, many, mixed = await org_factory(), await org_factory(), await org_factory()
    # few: 40 entries, all over a year old: all kept (the newest 100 always stay).
    await audit_rows(engine, few, 40, 400)
    # many: 150 over a year old, plus three recent creates: the newest 100 stay.
    await audit_rows(engine, many, 150, 400)
    for name in ("A", "B", "C"):
        r = await many.post("/categories", json={"name": name}, scope="write")
        assert r.status_code == 201
    # mixed: 150 under a year old and 50 over: the 50 go.
    await audit_rows(engine, mixed, 50, 400)
    await audit_rows(engine, mixed, 150, 200)
    before = {o.slug: await audit_page(o) for o in (few, many, mixed)}
    counts = {o.slug: await audit_count(engine, o) for o in (few, many, mixed)}

    result = await run_job("purge-history")
    assert result["auditEntries"] >= 50 + 50 + 3 and result["failed"] == 0

    # Each org's audit endpoint shows what it showed before.
    for o in (few, many, mixed):
        assert await audit_page(o) == before[o.slug]
    # `many` had the org's own audit entry from create_org besides its categories ones.
    assert await audit_count(engine, few) == counts[few.slug]
    async with tenant_session(engine, many.info.schema_name) as session:
        category_entries = await session.scalar(
            select(func.count())
            .select_from(AuditEntry)
            .where(AuditEntry.resource_type == "category")
        )
    assert category_entries == 100
    assert await audit_count(engine, mixed) == counts[mixed.slug] - 50


async def test_an_org_that_fails_does_not_stop_the_others(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    from tasks.purge import purge_history

    hook_id, ids = await webhook_with_pings(org, 1)
    _, other_ids = await webhook_with_pings(other_org, 1)
    await age_deliveries(engine, org, ids, 31)
    await age_deliveries(engine, other_org, other_ids, 31)
    schema = other_org.info.schema_name
    async with engine.begin() as conn:
        await conn.execute(text(f'ALTER TABLE "{schema}".audit_log RENAME TO audit_away'))
    try:
        result = await purge_history(engine)
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'ALTER TABLE "{schema}".audit_away RENAME TO audit_log'))
    assert result["failed"] >= 1
    assert await listed_deliveries(org, hook_id) == []


async def org_audit_rows(engine: AsyncEngine, org: OrgClient, n: int, days: int) -> list[str]:
    """``n`` entries of the org's audit log (``audit_entries``) ``days`` old."""
    now = utcnow()
    ids = [new_id("aud") for _ in range(n)]
    rows = [
        {
            "id": ids[i],
            "resource": "question",
            "resource_id": new_id("q"),
            "action": "updated",
            "actor": {"type": "apiKey", "id": "old"},
            "actor_key": "old",
            "before": {"title": f"old {i}"},
            "after": {"title": f"new {i}"},
            "created_at": now - timedelta(days=days, seconds=n - i),
        }
        for i in range(n)
    ]
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(insert(OrgAuditEntry), rows)
    return ids


async def org_audit_ids(org: OrgClient) -> set[str]:
    ids: set[str] = set()
    query: dict[str, Any] = {"limit": 100}
    while True:
        r = await org.get("/audit", query=query, scope="admin")
        assert r.status_code == 200, await r.get_data()
        body = await r.get_json()
        ids |= {e["id"] for e in body["data"]}
        if not body["meta"]["pagination"]["hasMore"]:
            return ids
        query = {"limit": 100, "cursor": body["meta"]["pagination"]["cursor"]}


async def test_the_org_audit_log_keeps_a_year_in_batches(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    """``audit_entries`` older than FAQ_AUDIT_RETENTION_DAYS go, in batches (more than two
    here), counted apart from the category audit's; younger ones stay, in every org."""
    old = await org_audit_rows(engine, org, 2_300, 366)
    kept = await org_audit_rows(engine, org, 30, 364)
    other_old = await org_audit_rows(engine, other_org, 5, 400)
    other_kept = await org_audit_rows(engine, other_org, 5, 1)
    assert set(old) | set(kept) <= await org_audit_ids(org)

    result = await run_job("purge-history")
    assert result["orgAuditEntries"] >= 2_300 + 5 and result["failed"] == 0
    listed = await org_audit_ids(org)
    assert set(kept) <= listed and not set(old) & listed
    other_listed = await org_audit_ids(other_org)
    assert set(other_kept) <= other_listed and not set(other_old) & other_listed
