"""One org whose schema fails (a table gone) does not stop the outbox relay, the delivery
re-drive or the publish sweep for the other orgs: each logs the org, counts it in
``faq_job_org_failures_total{job}`` and in its summary, and does the other orgs' work."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Delivery, DeliverySchedule
from api.webhooks.service import NewDelivery, queue_deliveries
from tasks.deliveries.redrive import redrive_overdue
from tasks.publishing import SweepIncomplete, publish_due_questions
from tasks.relay import relay_all
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tenancy.outbox import OutboxEvent
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient

PAST = "2020-01-01T00:00:00.000Z"


def failures(job: str) -> float:
    return REGISTRY.get_sample_value("faq_job_org_failures_total", {"job": job}) or 0.0


@contextlib.asynccontextmanager
async def table_gone(engine: AsyncEngine, org: OrgClient, table: str) -> AsyncIterator[None]:
    """The org's ``table`` is missing while the block runs (put back after)."""
    schema = org.info.schema_name
    async with engine.begin() as conn:
        await conn.execute(text(f'ALTER TABLE "{schema}".{table} RENAME TO {table}_gone'))
    try:
        yield
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'ALTER TABLE "{schema}".{table}_gone RENAME TO {table}'))


async def outbox_rows(engine: AsyncEngine, org: OrgClient) -> int:
    async with tenant_session(engine, org.info.schema_name) as session:
        count: int = (
            await session.execute(select(func.count()).select_from(OutboxEvent))
        ).scalar_one()
    return count


async def test_the_outbox_relay_goes_on_past_a_broken_org(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await org.post("/categories", json={"name": "Relayed"}, scope="write")
    await other_org.post("/categories", json={"name": "Stuck"}, scope="write")
    assert await outbox_rows(engine, org) >= 1 and await outbox_rows(engine, other_org) >= 1
    before = failures("outbox-relay")
    async with table_gone(engine, other_org, "webhooks"):
        result: Any = await relay_all(engine)
    assert result["failed"] >= 1 and result["events"] >= 1, result
    assert failures("outbox-relay") >= before + 1
    assert await outbox_rows(engine, org) == 0  # the healthy org's events were relayed
    assert await outbox_rows(engine, other_org) >= 1  # the broken org's are kept for later
    result = await relay_all(engine)  # once repaired, the next sweep relays them
    assert await outbox_rows(engine, other_org) == 0


async def _overdue_delivery(engine: AsyncEngine, org: OrgClient) -> str:
    r = await org.post(
        "/webhooks", json={"url": "https://127.0.0.1:9/hook", "events": ["category.created"]}
    )
    assert r.status_code == 201, await r.get_json()
    hook = (await r.get_json())["data"]
    past = utcnow() - timedelta(hours=1)
    async with tenant_session(engine, org.info.schema_name) as session:
        [delivery] = await queue_deliveries(
            session, org.info.id, [NewDelivery(hook["id"], "ping", {"webhookId": hook["id"]})]
        )
        await session.flush()
        await session.execute(
            update(Delivery).where(Delivery.id == delivery.id).values(next_attempt_at=past)
        )
        await session.execute(
            update(DeliverySchedule)
            .where(DeliverySchedule.org_id == org.info.id)
            .values(next_due_at=past)
        )
        await session.commit()  # a plain commit: the message is lost, the re-drive must find it
    return str(delivery.id)


async def test_the_redrive_goes_on_past_a_broken_org(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    healthy = await _overdue_delivery(engine, org)
    await _overdue_delivery(engine, other_org)
    before = failures("deliveries-redrive")
    started = utcnow()
    async with table_gone(engine, other_org, "deliveries"):
        result: Any = await redrive_overdue(engine)
    assert result["failed"] >= 1 and result["deliveries"] >= 1, result
    assert failures("deliveries-redrive") >= before + 1
    async with tenant_session(engine, org.info.schema_name) as session:
        due = (
            await session.execute(select(Delivery.next_attempt_at).where(Delivery.id == healthy))
        ).scalar_one()
    # Re-driven: due now, not an hour ago.
    assert due is not None and due >= started - timedelta(seconds=1)


async def test_the_publish_sweep_counts_a_broken_org(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    ok = await create(org, title="Fine", scheduledPublishAt=PAST)
    await create(other_org, title="Stuck", scheduledPublishAt=PAST)
    before = failures("publish-sweep")
    async with table_gone(engine, other_org, "questions"):
        with pytest.raises(SweepIncomplete):  # Dramatiq retries the failed org
            await publish_due_questions(engine)
    assert failures("publish-sweep") >= before + 1
    r = await org.get(f"/questions/{ok['id']}")
    assert (await r.get_json())["data"]["status"] == "published"
    await publish_due_questions(engine)
