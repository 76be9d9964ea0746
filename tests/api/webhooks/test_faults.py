"""Faults: a worker SIGKILLed mid-delivery, and Redis stopped while changes commit. Both end
with every event delivered exactly once to a receiver that deduplicates on the delivery id."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Delivery
from tenancy.db import tenant_session
from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.receiver import Answer, Endpoint, Processes, Receiver
from tests.fixtures.services import Services

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]


def created_category_ids(endpoint: Endpoint) -> Counter[str]:
    """How many distinct deliveries (after deduplication) carried each category."""
    return Counter(r.json["data"]["id"] for r in endpoint.unique().values())


async def statuses(engine: AsyncEngine, schema: str) -> list[str]:
    async with tenant_session(engine, schema) as session:
        return list((await session.execute(select(Delivery.status))).scalars())


async def test_worker_killed_mid_delivery(
    org, receiver: Receiver, processes: Processes, engine: AsyncEngine
):
    # The first time each delivery arrives the receiver takes 1.5 s to answer, so the kill
    # lands while requests are in flight; it records each request on arrival, as a receiver
    # that acts before answering would.
    endpoint = receiver.endpoint(lambda r, n: Answer(delay=1.5 if n == 0 else 0.0))
    await create_webhook(org, endpoint.url, events=["category.created"])
    ids = []
    for i in range(8):
        r = await org.post("/categories", json={"name": f"Killed {i}"})
        ids.append((await r.get_json())["data"]["id"])
    deadline = time.monotonic() + 15
    while endpoint.in_flight == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert endpoint.in_flight > 0
    await asyncio.to_thread(processes.worker.kill)
    in_flight_at_kill = {r.delivery_id for r in endpoint.requests}
    await asyncio.to_thread(processes.worker.start, "Worker process is ready")

    await endpoint.wait_for(len(ids), timeout=45)
    assert created_category_ids(endpoint) == Counter(ids)  # each event once, none lost

    async def all_succeeded() -> bool:
        found = await statuses(engine, org.info.schema_name)
        return len(found) == len(ids) and set(found) == {"succeeded"}

    deadline = time.monotonic() + 20
    while not await all_succeeded():
        assert time.monotonic() < deadline, await statuses(engine, org.info.schema_name)
        await asyncio.sleep(0.2)
    # The deliveries cut off by the kill were sent again under the same id, and their
    # records say an attempt was lost.
    per_id = Counter(r.delivery_id for r in endpoint.requests)
    assert any(per_id[d] >= 2 for d in in_flight_at_kill), per_id
    async with tenant_session(engine, org.info.schema_name) as session:
        attempts = list((await session.execute(select(Delivery.attempts))).scalars())
    lost = [a for each in attempts for a in each if a["error"] and "worker stopped" in a["error"]]
    assert lost


async def test_redis_stopped_during_writes(
    org, receiver: Receiver, services: Services, engine: AsyncEngine
):
    endpoint = receiver.endpoint()
    await create_webhook(org, endpoint.url, events=["category.created"])
    r = await org.post("/categories", json={"name": "Before"})
    ids = [(await r.get_json())["data"]["id"]]
    await endpoint.wait_for(1)

    await asyncio.to_thread(services.redis.stop)
    try:
        for i in range(5):
            r = await org.post("/categories", json={"name": f"While Redis is down {i}"})
            assert r.status_code == 201, await r.get_data()
            ids.append((await r.get_json())["data"]["id"])
        await asyncio.sleep(1.0)
        assert len(endpoint.unique()) == 1  # nothing could move while Redis was away
    finally:
        await asyncio.to_thread(services.redis.start)

    r = await org.post("/categories", json={"name": "After"})
    ids.append((await r.get_json())["data"]["id"])
    await endpoint.wait_for(len(ids), timeout=45)
    await asyncio.sleep(1.0)
    assert created_category_ids(endpoint) == Counter(ids)
    assert set(await statuses(engine, org.info.schema_name)) == {"succeeded"}


async def test_a_lost_send_message_is_redriven(org, endpoint: Endpoint, engine: AsyncEngine):
    """A delivery row whose ``deliveries.send`` message never left (committed without the
    after-commit sends) is found by the re-drive job and delivered."""
    from api.webhooks.service import NewDelivery, queue_deliveries

    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    async with tenant_session(engine, org.info.schema_name) as session:
        [delivery] = await queue_deliveries(
            session, org.info.id, [NewDelivery(hook["id"], "ping", {"webhookId": hook["id"]})]
        )
        await session.commit()  # a plain commit: the queued message is never sent
    await endpoint.wait_for(1, timeout=20)
    assert endpoint.requests[0].delivery_id == delivery.id


async def test_a_duplicate_message_sends_nothing_again(org, endpoint: Endpoint):
    from tenancy.queue import enqueue

    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    r = await org.post(f"/webhooks/{hook['id']}/test")
    delivery_id = (await r.get_json())["data"]["id"]
    await endpoint.wait_for(1)
    for _ in range(3):
        enqueue("deliveries.send", org.info.id, delivery_id, hook["id"])
    await asyncio.sleep(1.5)
    assert len(endpoint.requests) == 1
