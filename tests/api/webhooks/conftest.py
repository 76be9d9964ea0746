"""The TLS receiver, the real worker and scheduler, and webhook helpers for these tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from api.events import EVENT_CATALOG
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Endpoint, Processes, Receiver
from tests.fixtures.services import Services


@pytest.fixture(scope="session")
async def receiver(services: Services) -> AsyncIterator[Receiver]:
    server = await Receiver(services.root).start()
    yield server
    await server.stop()


@pytest.fixture(scope="package")
def processes(services: Services, receiver: Receiver) -> Iterator[Processes]:
    """``faq worker`` and ``faq scheduler`` subprocesses, trusting the receiver's CA. Package
    scope: they stop after these tests, so tests elsewhere that read the outbox find their
    events still there (nothing relays them away)."""
    procs = Processes(services.root, receiver.ca_path)
    procs.start()
    yield procs
    procs.stop()


@pytest.fixture
def endpoint(receiver: Receiver) -> Endpoint:
    return receiver.endpoint()


async def create_webhook(
    org: OrgClient, url: str, events: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    r = await org.post(
        "/webhooks", json={"url": url, "events": events or list(EVENT_CATALOG), **extra}
    )
    assert r.status_code == 201, await r.get_data()
    body: dict[str, Any] = (await r.get_json())["data"]
    return body


async def deliveries_of(org: OrgClient, webhook_id: str) -> list[dict[str, Any]]:
    r = await org.get(f"/webhooks/{webhook_id}/deliveries", query={"limit": 100}, scope="read")
    assert r.status_code == 200, await r.get_data()
    items: list[dict[str, Any]] = (await r.get_json())["data"]
    return items


async def wait_until(predicate: Any, timeout: float = 20) -> Any:
    """Await ``predicate()`` every 0.1 s until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = await predicate()
        if result:
            return result
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")
