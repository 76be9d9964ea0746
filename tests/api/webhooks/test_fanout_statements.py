"""Issue 14: writing a fan-out's deliveries costs a fixed number of statements, not one per
webhook. One transaction queueing deliveries for several webhooks counts each webhook's
``deliveryCount`` in one UPDATE (whatever the number of webhooks), and every count is right."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.service import NewDelivery, queue_deliveries
from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Receiver

WEBHOOKS = 6


@pytest.fixture
def statements() -> Iterator[list[str]]:
    sent: list[str] = []

    def on_cursor(*args: Any) -> None:
        sent.append(str(args[2]))

    event.listen(Engine, "before_cursor_execute", on_cursor)
    try:
        yield sent
    finally:
        event.remove(Engine, "before_cursor_execute", on_cursor)


async def test_delivery_counts_of_a_fan_out_in_one_statement(
    org: OrgClient, receiver: Receiver, engine: AsyncEngine, statements: list[str]
) -> None:
    hooks = [
        await create_webhook(org, receiver.endpoint().url, events=["category.created"])
        for _ in range(WEBHOOKS)
    ]
    # Webhook i gets i + 1 deliveries (the order mixed, as a relay batch of events makes it).
    items = [
        NewDelivery(hook["id"], "ping", {"webhookId": hook["id"], "n": n})
        for n in range(WEBHOOKS)
        for i, hook in enumerate(hooks)
        if n <= i
    ]
    statements.clear()
    async with tenant_session(engine, org.info.schema_name) as session:
        await queue_deliveries(session, org.info.id, items)
        await commit(session)
    webhook_updates = [s for s in statements if s.startswith("UPDATE") and ".webhooks SET" in s]
    assert len(webhook_updates) == 1, webhook_updates

    for i, hook in enumerate(hooks):
        r = await org.get(f"/webhooks/{hook['id']}", scope="read")
        assert r.status_code == 200
        assert (await r.get_json())["data"]["deliveryCount"] == i + 1
