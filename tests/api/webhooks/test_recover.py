"""``recover`` never queues a delivery twice: a failed delivery that an earlier recover or a
replay already re-sent is left alone, so repeated calls cannot multiply the rows."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.api.webhooks.conftest import create_webhook, deliveries_of, wait_until
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Answer, Receiver

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]


async def settled(org: OrgClient, webhook_id: str, count: int) -> list[dict[str, Any]]:
    """Wait until the webhook has ``count`` deliveries, none of them pending."""

    async def done() -> list[dict[str, Any]]:
        items = await deliveries_of(org, webhook_id)
        ok = len(items) == count and all(d["status"] != "pending" for d in items)
        return items if ok else []

    result: list[dict[str, Any]] = await wait_until(done)
    return result


async def recover(org: OrgClient, webhook_id: str, since: datetime) -> int:
    r = await org.post(f"/webhooks/{webhook_id}/recover", json={"since": since.isoformat()})
    assert r.status_code == 202, await r.get_data()
    queued: int = (await r.get_json())["data"]["queued"]
    return queued


async def test_recover_twice_queues_each_failed_delivery_once(
    org: OrgClient, receiver: Receiver
) -> None:
    healthy = {"now": False}
    endpoint = receiver.endpoint(lambda r, n: Answer(status=200 if healthy["now"] else 500))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    since = datetime.now(UTC) - timedelta(minutes=5)
    for name in ("Lost 1", "Lost 2", "Lost 3"):
        await org.post("/categories", json={"name": name})
    failed = await settled(org, hook["id"], 3)
    assert {d["status"] for d in failed} == {"failed"}
    healthy["now"] = True

    # Back to back: the second call finds the three already re-sent (still pending or not).
    assert await recover(org, hook["id"], since) == 3
    assert await recover(org, hook["id"], since) == 0
    items = await settled(org, hook["id"], 6)
    replays = [d for d in items if d["replayOf"]]
    assert Counter(d["replayOf"] for d in replays) == Counter(d["id"] for d in failed)
    assert {d["status"] for d in replays} == {"succeeded"}
    # Later again: nothing more.
    assert await recover(org, hook["id"], since) == 0
    await asyncio.sleep(0.3)
    assert len(await deliveries_of(org, hook["id"])) == 6
    got = (await (await org.get(f"/webhooks/{hook['id']}")).get_json())["data"]
    assert got["deliveryCount"] == 6


async def test_a_replayed_delivery_is_not_recovered(org: OrgClient, receiver: Receiver) -> None:
    endpoint = receiver.endpoint(lambda r, n: Answer(status=500))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    since = datetime.now(UTC) - timedelta(minutes=5)
    await org.post("/categories", json={"name": "Replayed"})
    await org.post("/categories", json={"name": "Not replayed"})
    first = await settled(org, hook["id"], 2)
    replayed, other = first[0], first[1]
    r = await org.post(f"/webhooks/{hook['id']}/deliveries/{replayed['id']}/replay")
    assert r.status_code == 202
    assert await recover(org, hook["id"], since) == 1
    items = await settled(org, hook["id"], 4)
    assert Counter(d["replayOf"] for d in items if d["replayOf"]) == Counter(
        [replayed["id"], other["id"]]
    )


async def test_recover_while_failing_resends_only_the_newest_failure(
    org: OrgClient, receiver: Receiver
) -> None:
    """Each recover re-sends the latest failure of each chain, never the ones re-sent before:
    with an endpoint that keeps failing, every call adds one delivery per original, not more."""
    endpoint = receiver.endpoint(lambda r, n: Answer(status=500))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    since = datetime.now(UTC) - timedelta(minutes=5)
    await org.post("/categories", json={"name": "Down 1"})
    await org.post("/categories", json={"name": "Down 2"})
    await settled(org, hook["id"], 2)
    for round_ in (1, 2, 3):
        assert await recover(org, hook["id"], since) == 2
        await settled(org, hook["id"], 2 + 2 * round_)
