"""Deliveries end to end: the API, the outbox relay and ``deliveries.send`` in a real worker,
over TLS to a real receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import stripe

from tests.api.webhooks.conftest import create_webhook, deliveries_of, wait_until
from tests.fixtures.receiver import Answer, Endpoint, Processes, Receiver

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]

CATEGORY_EVENTS = ["category.created", "category.updated", "category.deleted"]


async def delivery_where(org, webhook_id: str, check: Any, timeout: float = 15) -> dict[str, Any]:
    async def find() -> dict[str, Any] | None:
        for d in await deliveries_of(org, webhook_id):
            if check(d):
                return d
        return None

    found: dict[str, Any] = await wait_until(find, timeout)
    return found


def verify_legacy(raw: bytes, header: str, secret: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header)


# ---- events and their data -------------------------------------------------------------------


async def test_category_events_arrive_with_data_equal_to_get(org, endpoint: Endpoint):
    hook = await create_webhook(org, endpoint.url, events=CATEGORY_EVENTS)
    created = (await (await org.post("/categories", json={"name": "Billing"})).get_json())["data"]
    await endpoint.wait_for(1)
    [first] = endpoint.of_event("category.created")
    assert (
        first.json["data"]
        == (await (await org.get(f"/categories/{created['id']}")).get_json())["data"]
    )

    r = await org.patch(f"/categories/{created['id']}", json={"description": "Invoices"})
    assert r.status_code == 200
    await endpoint.wait_for(2)
    [updated] = endpoint.of_event("category.updated")
    now = (await (await org.get(f"/categories/{created['id']}")).get_json())["data"]
    assert updated.json["data"] == now

    r = await org.delete(f"/categories/{created['id']}")
    assert r.status_code == 204
    await endpoint.wait_for(3)
    [deleted] = endpoint.of_event("category.deleted")
    assert deleted.json["data"] == now  # as it was

    for r in endpoint.unique().values():
        body = r.json
        assert set(body) == {"id", "event", "data", "timestamp"}
        assert r.headers["X-Service-Event"] == body["event"]
        assert r.headers["X-Service-Delivery-Id"] == body["id"]
        assert body["id"].startswith("dlv_")
        assert len(body["timestamp"]) == 24 and body["timestamp"].endswith("Z")
        assert "secret" not in r.body.decode()
    got = (await (await org.get(f"/webhooks/{hook['id']}")).get_json())["data"]
    assert got["deliveryCount"] == 3


async def test_merge_reorder_force_delete_emit_updates(org, endpoint: Endpoint):
    await create_webhook(org, endpoint.url, events=CATEGORY_EVENTS)
    a = (await (await org.post("/categories", json={"name": "A"})).get_json())["data"]
    b = (await (await org.post("/categories", json={"name": "B"})).get_json())["data"]
    child = (
        await (await org.post("/categories", json={"name": "C", "parentId": a["id"]})).get_json()
    )["data"]
    await endpoint.wait_for(3)
    r = await org.post(
        "/categories/merge", json={"sourceId": a["id"], "targetId": b["id"], "deleteSource": True}
    )
    assert r.status_code == 200
    await endpoint.wait_for(5)
    moved = [r.json["data"] for r in endpoint.of_event("category.updated")]
    assert [m["id"] for m in moved] == [child["id"]]
    assert moved[0] == (await (await org.get(f"/categories/{child['id']}")).get_json())["data"]
    [gone] = endpoint.of_event("category.deleted")
    assert gone.json["data"]["id"] == a["id"]

    # child and b both have order 0: only b's changes (to 1), so one category.updated.
    r = await org.post("/categories/reorder", json={"ids": [child["id"], b["id"]]})
    assert r.status_code == 200
    await endpoint.wait_for(6)
    [reordered] = endpoint.of_event("category.updated")[1:]
    data = reordered.json["data"]
    assert data["id"] == b["id"] and data["order"] == 1
    assert data == (await (await org.get(f"/categories/{data['id']}")).get_json())["data"]

    r = await org.post(
        "/questions", json={"title": "T", "answer": "A", "categoryId": b["id"], "status": "draft"}
    )
    assert r.status_code == 201
    assert (await org.delete(f"/categories/{b['id']}", query={"force": "true"})).status_code == 204
    await endpoint.wait_for(8)
    deleted = [r.json["data"] for r in endpoint.of_event("category.deleted")]
    assert [d["id"] for d in deleted] == [a["id"], b["id"]]
    assert deleted[1]["questionCount"] == 1


async def live(org, path: str) -> dict:
    """GET's question: its draft (issue 30) and its import's source (issue 29) are in events
    too (issue 40): null here."""
    data = (await (await org.get(path)).get_json())["data"]
    assert data["draft"] is None and data["externalId"] is None
    return data


async def test_question_events_arrive_with_data_equal_to_get(org, endpoint: Endpoint):
    await create_webhook(
        org,
        endpoint.url,
        events=[
            "question.created",
            "question.updated",
            "question.published",
            "question.unpublished",
            "question.deleted",
        ],
    )
    category = (await (await org.post("/categories", json={"name": "Q"})).get_json())["data"]
    r = await org.post(
        "/questions",
        json={"title": "How?", "answer": "Thus.", "categoryId": category["id"], "status": "draft"},
    )
    assert r.status_code == 201, await r.get_data()
    question = (await r.get_json())["data"]
    path = f"/questions/{question['id']}"
    await endpoint.wait_for(1)
    [created] = endpoint.of_event("question.created")
    assert created.json["data"] == await live(org, path)

    assert (await org.patch(path, json={"status": "published"})).status_code == 200
    await endpoint.wait_for(3)
    now = await live(org, path)
    assert [r.json["data"] for r in endpoint.of_event("question.published")] == [now]
    assert [r.json["data"] for r in endpoint.of_event("question.updated")] == [now]

    assert (await org.patch(path, json={"status": "draft"})).status_code == 200
    await endpoint.wait_for(5)
    now = await live(org, path)
    assert [r.json["data"] for r in endpoint.of_event("question.unpublished")] == [now]

    assert (await org.delete(path)).status_code == 204
    await endpoint.wait_for(6)
    assert [r.json["data"] for r in endpoint.of_event("question.deleted")] == [now]


async def test_only_subscribed_events_are_delivered(org, receiver: Receiver):
    only_deleted = receiver.endpoint()
    everything = receiver.endpoint()
    await create_webhook(org, only_deleted.url, events=["category.deleted"])
    await create_webhook(org, everything.url, events=CATEGORY_EVENTS)
    created = (await (await org.post("/categories", json={"name": "X"})).get_json())["data"]
    await org.delete(f"/categories/{created['id']}")
    await everything.wait_for(2)
    await only_deleted.wait_for(1)
    await asyncio.sleep(0.3)
    assert [r.json["event"] for r in only_deleted.requests] == ["category.deleted"]


# ---- signatures ------------------------------------------------------------------------------


async def test_signatures_verify_with_stripe_and_legacy(org, endpoint: Endpoint):
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Signed"})
    await endpoint.wait_for(1)
    received = endpoint.requests[0]
    signature = received.headers["X-Service-Webhook-Signature"]
    assert stripe.WebhookSignature.verify_header(
        received.body.decode(), signature, hook["secret"], tolerance=300
    )
    assert verify_legacy(received.body, received.headers["X-Service-Signature"], hook["secret"])
    t = int(signature.split(",")[0].removeprefix("t="))
    assert abs(t - time.time()) < 30
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(
            received.body.decode() + " ", signature, hook["secret"], tolerance=300
        )
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(
            received.body.decode(), signature, "whsec_" + "A" * 43, tolerance=300
        )
    assert not verify_legacy(
        received.body + b" ", received.headers["X-Service-Signature"], hook["secret"]
    )


# ---- retries ---------------------------------------------------------------------------------


async def test_retries_keep_the_id_and_sign_afresh(org, receiver: Receiver):
    endpoint = receiver.endpoint(lambda r, n: Answer(status=500, body=b"boom"))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Flaky"})
    await endpoint.wait_for(4, timeout=20, unique=False)
    delivery = await delivery_where(org, hook["id"], lambda d: d["status"] == "failed", 10)
    await asyncio.sleep(1.5)
    assert len(endpoint.requests) == 4  # 1 + 3 retries, then no more
    assert {r.delivery_id for r in endpoint.requests} == {delivery["id"]}
    bodies = [r.json for r in endpoint.requests]
    assert len({b["timestamp"] for b in bodies}) == 4
    assert all(b["data"] == bodies[0]["data"] and b["event"] == "category.created" for b in bodies)
    for r in endpoint.requests:
        stripe.WebhookSignature.verify_header(
            r.body.decode(), r.headers["X-Service-Webhook-Signature"], hook["secret"], tolerance=300
        )
    # About base, 2x base, 4x base (base 0.4 s), jitter at most ±20%, plus processing time.
    gaps = [b.at - a.at for a, b in zip(endpoint.requests, endpoint.requests[1:], strict=False)]
    for n, gap in enumerate(gaps):
        nominal = 0.4 * 2**n
        # Never early; late by at most the worker's idle polling of its queues (~1 s each).
        assert nominal * 0.8 - 0.05 <= gap <= nominal * 1.2 + 2.5, gaps
    assert [a["responseStatus"] for a in delivery["attempts"]] == [500] * 4
    assert all(a["error"] and a["durationMs"] >= 0 for a in delivery["attempts"])
    # Exactly the contract's keys (the answer's first 2 KB stay in the stored record).
    assert all(
        set(a) == {"at", "responseStatus", "durationMs", "error"} for a in delivery["attempts"]
    )
    assert delivery["nextAttemptAt"] is None
    assert delivery["payload"] == bodies[-1]


async def test_a_later_attempt_succeeds(org, receiver: Receiver):
    endpoint = receiver.endpoint(lambda r, n: Answer(status=502 if n < 2 else 204))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Third time"})
    delivery = await delivery_where(org, hook["id"], lambda d: d["status"] == "succeeded", 15)
    assert [a["responseStatus"] for a in delivery["attempts"]] == [502, 502, 204]
    assert len(endpoint.unique()) == 1 and len(endpoint.requests) == 3


async def test_timeout_is_a_failure(org, receiver: Receiver):
    # The worker's timeout is 2 s: the first answer comes too late, the retry in time.
    endpoint = receiver.endpoint(lambda r, n: Answer(delay=3.0 if n == 0 else 0.0))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Slow"})
    delivery = await delivery_where(org, hook["id"], lambda d: d["status"] == "succeeded", 20)
    first, second = delivery["attempts"]
    assert first["responseStatus"] is None and "no response within 2" in first["error"]
    assert 1900 <= first["durationMs"] <= 4500  # 2 s, plus a busy event loop's slack
    assert second["responseStatus"] == 200 and second["error"] is None


@pytest.mark.parametrize("status", [429, 503])
async def test_retry_after_is_honoured(org, receiver: Receiver, status: int):
    endpoint = receiver.endpoint(
        lambda r, n: Answer(status=status, headers={"Retry-After": "2"}) if n == 0 else Answer()
    )
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Later"})
    await delivery_where(org, hook["id"], lambda d: d["status"] == "succeeded", 15)
    first, second = endpoint.requests
    assert second.at - first.at >= 1.95  # not the 0.4 s base


async def test_redirects_are_failures_and_not_followed(org, receiver: Receiver):
    target = receiver.endpoint()
    endpoint = receiver.endpoint(
        lambda r, n: (
            Answer(status=302, headers={"Location": target.url}) if n == 0 else Answer(status=200)
        )
    )
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Moved"})
    delivery = await delivery_where(org, hook["id"], lambda d: d["status"] == "succeeded", 15)
    assert delivery["attempts"][0]["responseStatus"] == 302
    assert delivery["attempts"][0]["error"]
    assert target.requests == []


async def test_gone_deactivates_and_stops_pending_retries(org, receiver: Receiver):
    def script(r, n):
        if r.json["event"] == "ping":
            return Answer(status=410)
        return Answer(status=503, headers={"Retry-After": "60"})

    endpoint = receiver.endpoint(script)
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Pending"})
    pending = await delivery_where(org, hook["id"], lambda d: d["attempts"], 10)
    assert pending["status"] == "pending" and pending["nextAttemptAt"]
    r = await org.post(f"/webhooks/{hook['id']}/test")
    ping_id = (await r.get_json())["data"]["id"]
    ping = await delivery_where(org, hook["id"], lambda d: d["id"] == ping_id and d["attempts"])
    assert ping["status"] == "failed"
    assert ping["attempts"][0]["responseStatus"] == 410
    got = (await (await org.get(f"/webhooks/{hook['id']}")).get_json())["data"]
    assert got["active"] is False
    stopped = await delivery_where(org, hook["id"], lambda d: d["id"] == pending["id"])
    assert stopped["status"] == "failed" and stopped["nextAttemptAt"] is None
    assert len(stopped["attempts"]) == 1

    # The org's audit log says the service switched the webhook off (once).
    async def switched_off() -> list[dict]:
        r = await org.get("/audit", query={"resource": "webhook", "action": "deactivated"})
        return (await r.get_json())["data"]

    entries = await wait_until(switched_off)
    assert [(e["resourceId"], e["actor"], e["before"], e["after"]) for e in entries] == [
        (hook["id"], {"type": "system", "id": "delivery"}, {"active": True}, {"active": False})
    ]


async def test_response_body_read_is_capped(org, receiver: Receiver, engine):
    endpoint = receiver.endpoint(lambda r, n: Answer(status=200, endless_body=True))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    started = time.monotonic()
    await org.post("/categories", json={"name": "Big answer"})
    delivery = await delivery_where(org, hook["id"], lambda d: d["status"] == "succeeded", 15)
    assert time.monotonic() - started < 10
    assert len(delivery["attempts"]) == 1
    from sqlalchemy import select

    from api.webhooks.models import Delivery
    from tenancy.db import tenant_session

    async with tenant_session(engine, org.info.schema_name) as session:
        [attempt] = (
            await session.execute(select(Delivery.attempts).where(Delivery.id == delivery["id"]))
        ).scalar_one()
    assert attempt["responseBody"] == "x" * 2048


# ---- ping, replay, recover -------------------------------------------------------------------


async def test_ping(org, endpoint: Endpoint):
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    r = await org.post(f"/webhooks/{hook['id']}/test")
    assert r.status_code == 202
    delivery = (await r.get_json())["data"]
    assert delivery["id"].startswith("dlv_") and delivery["event"] == "ping"
    assert delivery["status"] == "pending" and delivery["replayOf"] is None
    assert delivery["webhookId"] == hook["id"]
    assert delivery["payload"]["data"] == {"webhookId": hook["id"]}
    await endpoint.wait_for(1)
    body = endpoint.requests[0].json
    assert body["event"] == "ping" and body["data"] == {"webhookId": hook["id"]}
    assert body["id"] == delivery["id"]
    assert endpoint.requests[0].headers["X-Service-Event"] == "ping"
    done = await delivery_where(org, hook["id"], lambda d: d["status"] == "succeeded")
    assert done["payload"] == body
    r = await org.get(f"/webhooks/{hook['id']}/deliveries/{delivery['id']}")
    assert (await r.get_json())["data"] == done
    got = (await (await org.get(f"/webhooks/{hook['id']}")).get_json())["data"]
    assert got["deliveryCount"] == 1


async def test_replay_gets_a_new_id(org, endpoint: Endpoint):
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Again"})
    original = await delivery_where(org, hook["id"], lambda d: d["status"] == "succeeded")
    r = await org.post(f"/webhooks/{hook['id']}/deliveries/{original['id']}/replay")
    assert r.status_code == 202
    replay = (await r.get_json())["data"]
    assert replay["id"] != original["id"] and replay["replayOf"] == original["id"]
    await endpoint.wait_for(2)
    bodies = {r.delivery_id: r.json for r in endpoint.unique().values()}
    assert bodies[replay["id"]]["data"] == bodies[original["id"]]["data"]
    assert bodies[replay["id"]]["event"] == "category.created"
    stripe.WebhookSignature.verify_header(
        endpoint.unique()[replay["id"]].body.decode(),
        endpoint.unique()[replay["id"]].headers["X-Service-Webhook-Signature"],
        hook["secret"],
        tolerance=300,
    )
    got = (await (await org.get(f"/webhooks/{hook['id']}")).get_json())["data"]
    assert got["deliveryCount"] == 2
    listed = await deliveries_of(org, hook["id"])
    assert [d["id"] for d in listed] == [replay["id"], original["id"]]  # newest first


async def test_recover_replays_failed_deliveries(org, receiver: Receiver):
    healthy = {"now": False}
    endpoint = receiver.endpoint(lambda r, n: Answer(status=200 if healthy["now"] else 500))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    since = datetime.now(UTC) - timedelta(minutes=5)
    await org.post("/categories", json={"name": "Lost 1"})
    await org.post("/categories", json={"name": "Lost 2"})

    async def both_failed() -> bool:
        return [d["status"] for d in await deliveries_of(org, hook["id"])] == ["failed", "failed"]

    await wait_until(both_failed, 20)
    failed_ids = {d["id"] for d in await deliveries_of(org, hook["id"])}
    healthy["now"] = True
    r = await org.post(f"/webhooks/{hook['id']}/recover", json={"since": since.isoformat()})
    assert r.status_code == 202
    assert await r.get_json() == {"data": {"queued": 2}}

    async def replayed() -> list[dict[str, Any]]:
        items = [d for d in await deliveries_of(org, hook["id"]) if d["replayOf"]]
        return items if len(items) == 2 and all(d["status"] == "succeeded" for d in items) else []

    replays = await wait_until(replayed, 15)
    assert {d["replayOf"] for d in replays} == failed_ids
    r = await org.post(
        f"/webhooks/{hook['id']}/recover",
        json={"since": (datetime.now(UTC) + timedelta(seconds=5)).isoformat()},
    )
    assert await r.get_json() == {"data": {"queued": 0}}


# ---- inactive and deleted webhooks ------------------------------------------------------------


async def test_inactive_and_deleted_webhooks_get_nothing(org, receiver: Receiver):
    control, inactive, deleted = receiver.endpoint(), receiver.endpoint(), receiver.endpoint()
    await create_webhook(org, control.url, events=["category.created"])
    paused = await create_webhook(org, inactive.url, events=["category.created"])
    removed = await create_webhook(org, deleted.url, events=["category.created"])
    await org.patch(f"/webhooks/{paused['id']}", json={"active": False})
    await org.delete(f"/webhooks/{removed['id']}")
    await org.post("/categories", json={"name": "Only the control"})
    await control.wait_for(1)  # the same fan-out transaction would have made all three
    await asyncio.sleep(0.5)
    assert inactive.requests == [] and deleted.requests == []
    got = (await (await org.get(f"/webhooks/{paused['id']}")).get_json())["data"]
    assert got["deliveryCount"] == 0
    # Re-activated, it gets events again.
    await org.patch(f"/webhooks/{paused['id']}", json={"active": True})
    await org.post("/categories", json={"name": "Back"})
    await inactive.wait_for(1)


async def test_delete_stops_pending_retries(org, receiver: Receiver, engine):
    endpoint = receiver.endpoint(lambda r, n: Answer(status=503, headers={"Retry-After": "2"}))
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Doomed"})
    await endpoint.wait_for(1)
    assert (await org.delete(f"/webhooks/{hook['id']}")).status_code == 204
    await asyncio.sleep(3.5)
    assert len(endpoint.requests) == 1

    from sqlalchemy import select

    from api.webhooks.models import Delivery
    from tenancy.db import tenant_session

    async with tenant_session(engine, org.info.schema_name) as session:
        statuses = (await session.execute(select(Delivery.status))).scalars().all()
    assert statuses == ["failed"]


# ---- fairness and connections ------------------------------------------------------------------


async def test_a_slow_receiver_does_not_delay_others(org_factory, receiver: Receiver):
    slow_org, fast_org = await org_factory(), await org_factory()
    # Slow, but under the 2 s timeout: an attempt that timed out would leave its handler
    # running here after the worker let go of it, and the count below would include it.
    slow = receiver.endpoint(lambda r, n: Answer(delay=1.5))
    fast = receiver.endpoint()
    await create_webhook(slow_org, slow.url, events=["category.created"])
    await create_webhook(fast_org, fast.url, events=["category.created"])
    for i in range(12):
        await slow_org.post("/categories", json={"name": f"Slow {i}"})
    await slow.wait_for(3, timeout=10)  # its in-flight limit (3) is taken
    started = time.monotonic()
    for i in range(3):
        await fast_org.post("/categories", json={"name": f"Fast {i}"})
    await fast.wait_for(3, timeout=10)
    assert time.monotonic() - started < 2.5  # behind the slow ones (4 waves) it would take 6 s
    assert slow.in_flight <= 3


async def test_connections_are_reused(org, endpoint: Endpoint):
    """Sequential deliveries to one receiver share a kept-alive connection. (An attempt the
    2 s test timeout cut on a loaded machine closes its connection and its retry opens
    another: so the check is that some connection carried several requests, not that
    there were few connections.)"""
    from collections import Counter

    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    for i in range(6):
        await org.post(f"/webhooks/{hook['id']}/test")
        await endpoint.wait_for(i + 1)
    per_connection = Counter(r.peer for r in endpoint.requests)
    assert max(per_connection.values()) >= 2, per_connection


async def test_a_name_is_resolved_and_sent_with_sni(org, receiver: Receiver, processes: Processes):
    endpoint = receiver.endpoint()
    hook = await create_webhook(
        org, receiver.url(endpoint.name, host="localhost"), events=["category.created"]
    )
    await org.post(f"/webhooks/{hook['id']}/test")
    await endpoint.wait_for(1)
    assert endpoint.requests[0].headers["Host"] == f"localhost:{receiver.port}"


async def test_the_documented_verifier_accepts_real_deliveries(org, endpoint: Endpoint):
    """The Python example in docs/webhooks.md, run against a delivery as it arrived."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "webhooks.md").read_text()
    namespace: dict[str, Any] = {}
    exec(re.search(r"```python\n(.*?)```", doc, re.S).group(1), namespace)
    verify = namespace["verify"]
    hook = await create_webhook(org, endpoint.url, events=["category.created"])
    await org.post("/categories", json={"name": "Documented"})
    await endpoint.wait_for(1)
    received = endpoint.requests[0]
    assert verify(received.body, received.headers, hook["secret"])
    legacy_only = {k: v for k, v in received.headers.items() if k != "X-Service-Webhook-Signature"}
    assert verify(received.body, legacy_only, hook["secret"])
    assert not verify(received.body + b" ", received.headers, hook["secret"])
    assert not verify(received.body, received.headers, "whsec_" + "B" * 43)
