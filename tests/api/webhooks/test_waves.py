"""Deliveries handed to a send already running for their webhook go out side by side (up to
``FAQ_WEBHOOK_MAX_IN_FLIGHT``, 3 for these tests), not one at a time behind the first."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Answer, Receiver

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]

LIMIT = 3  # FAQ_WEBHOOK_MAX_IN_FLIGHT of the test worker (tests/fixtures/receiver.py)


async def test_deliveries_queued_behind_a_send_in_flight_widen_its_wave(
    org: OrgClient, receiver: Receiver
) -> None:
    # Each request takes 0.3 s to answer: the first event's send is in flight while the
    # next events are relayed, so their deliveries join that send.
    endpoint = receiver.endpoint(lambda r, n: Answer(delay=0.3))
    await create_webhook(org, endpoint.url, events=["category.created"])
    peak = 0
    watching = True

    async def watch() -> None:
        nonlocal peak
        while watching:
            peak = max(peak, endpoint.in_flight)
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    try:
        r = await org.post("/categories", json={"name": "Wave 0"})
        ids = [(await r.get_json())["data"]["id"]]
        deadline = time.monotonic() + 15
        while endpoint.in_flight == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        assert endpoint.in_flight == 1
        for i in range(1, 7):
            r = await org.post("/categories", json={"name": f"Wave {i}"})
            ids.append((await r.get_json())["data"]["id"])
        await endpoint.wait_for(len(ids), timeout=30)
    finally:
        watching = False
        await watcher
    delivered = Counter(r.json["data"]["id"] for r in endpoint.unique().values())
    assert delivered == Counter(ids)  # each event once
    assert 2 <= peak <= LIMIT  # side by side, within the limit
