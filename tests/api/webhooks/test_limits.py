"""The webhook cap of each plan (STARTER 10, PRO 50, ENTERPRISE 500 live webhooks): over it,
402 ``plan_limit_reached`` and nothing is created, also under concurrent creates."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Webhook
from api.webhooks.signing import encrypt_secret, new_secret
from billing.plans import Plan
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tenancy.ids import new_id
from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Endpoint

BODY = {"events": ["category.created"]}


async def stored_webhooks(engine: AsyncEngine, org: OrgClient) -> int:
    async with tenant_session(engine, org.info.schema_name) as session:
        count = await session.scalar(
            select(func.count()).select_from(Webhook).where(Webhook.deleted_at.is_(None))
        )
    return int(count or 0)


async def prefill(engine: AsyncEngine, org: OrgClient, n: int, url: str) -> None:
    """``n`` live webhooks written straight to the org's table (faster than n creates)."""
    now = utcnow()
    rows: list[dict[str, Any]] = [
        {
            "id": new_id("wh"),
            "url": url,
            "events": ["category.created"],
            "active": True,
            "description": None,
            "secret_ciphertext": encrypt_secret(new_secret()),
            "delivery_count": 0,
            "created_at": now,
            "updated_at": now,
        }
        for _ in range(n)
    ]
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(insert(Webhook), rows)
        await session.commit()


async def expect_cap_reached(org: OrgClient, url: str) -> None:
    r = await org.post("/webhooks", json={"url": url, **BODY})
    assert r.status_code == 402, await r.get_data()
    error = (await r.get_json())["error"]
    assert error["code"] == "plan_limit_reached"
    assert "webhooks" in error["message"]


async def test_starter_allows_ten_live_webhooks(
    org: OrgClient, endpoint: Endpoint, engine: AsyncEngine
) -> None:
    ids = [(await create_webhook(org, endpoint.url))["id"] for _ in range(10)]
    await expect_cap_reached(org, endpoint.url)
    assert await stored_webhooks(engine, org) == 10
    listed = await (await org.get("/webhooks", query={"limit": 100})).get_json()
    assert sorted(w["id"] for w in listed["data"]) == sorted(ids)
    # A deleted webhook frees its room; an inactive one still counts.
    await org.patch(f"/webhooks/{ids[0]}", json={"active": False})
    await expect_cap_reached(org, endpoint.url)
    assert (await org.delete(f"/webhooks/{ids[1]}")).status_code == 204
    billing = (await (await org.get("/billing", scope="read")).get_json())["data"]
    assert (billing["caps"]["webhookLimit"], billing["usage"]["webhooks"]) == (10, 9)
    await create_webhook(org, endpoint.url)
    await expect_cap_reached(org, endpoint.url)


@pytest.mark.parametrize(("plan", "cap"), [(Plan.PRO, 50), (Plan.ENTERPRISE, 500)])
async def test_paid_plan_caps(
    org_factory: Any, endpoint: Endpoint, engine: AsyncEngine, plan: Plan, cap: int
) -> None:
    org = await org_factory(plan)
    await prefill(engine, org, cap - 1, endpoint.url)
    await create_webhook(org, endpoint.url)
    await expect_cap_reached(org, endpoint.url)
    assert await stored_webhooks(engine, org) == cap


async def test_free_stays_plan_required(org_factory: Any, endpoint: Endpoint) -> None:
    free = await org_factory(Plan.FREE)
    r = await free.post("/webhooks", json={"url": endpoint.url, **BODY})
    assert r.status_code == 403
    assert (await r.get_json())["error"]["code"] == "plan_required"


async def test_cap_holds_under_concurrent_creates(
    org: OrgClient, endpoint: Endpoint, engine: AsyncEngine
) -> None:
    for _ in range(7):
        await create_webhook(org, endpoint.url)
    results = await asyncio.gather(
        *(org.post("/webhooks", json={"url": endpoint.url, **BODY}) for _ in range(8))
    )
    statuses = sorted(r.status_code for r in results)
    assert statuses.count(201) == 3 and statuses.count(402) == 5, statuses
    assert await stored_webhooks(engine, org) == 10


async def test_downgrade_keeps_webhooks_past_the_cap(
    org_factory: Any, endpoint: Endpoint, engine: AsyncEngine
) -> None:
    from tenancy.orgs import set_plan

    org = await org_factory(Plan.PRO)
    await prefill(engine, org, 12, endpoint.url)
    await set_plan(engine, org.slug, Plan.STARTER, actor={"type": "ops", "id": "test"})
    listed = await (await org.get("/webhooks", query={"limit": 100})).get_json()
    assert len(listed["data"]) == 12
    await expect_cap_reached(org, endpoint.url)
    assert await stored_webhooks(engine, org) == 12
