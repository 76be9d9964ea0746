"""Plan changes from Stripe events as the API sees them on the next request: a downgrade keeps
data and webhooks and blocks creates past the new cap; an upgrade lifts the webhook gate."""

from __future__ import annotations

import time
from typing import Any

from billing.limits import ensure_webhooks_allowed
from billing.plans import Plan
from tests.billing.conftest import StripeSender, subscription_event, unique
from tests.fixtures.orgs import OrgClient

WEBHOOK = {"url": "https://127.0.0.1:9/hooks/faq", "events": ["question.created"]}


async def _status(response: Any, status: int, code: str | None = None) -> Any:
    assert response.status_code == status, await response.get_data()
    body = await response.get_json()
    if code is not None:
        assert body["error"]["code"] == code
    return body


async def test_downgrade_keeps_data_and_webhooks_and_blocks_creates_past_the_cap(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org: OrgClient = await org_factory(Plan.FREE)
    subscription = unique("sub")
    now = int(time.time())
    await stripe_events.deliver(
        subscription_event(
            "created", subscription, lookup_key="starter", org=org.slug, created=now - 60
        )
    )
    # STARTER: webhooks allowed, 50 categories. Go past FREE's cap of 10 (default included).
    webhook = (await _status(await org.post("/webhooks", json=WEBHOOK), 201))["data"]
    ids = []
    for n in range(11):
        body = await _status(
            await org.post("/categories", json={"name": f"Topic {n}"}, scope="write"), 201
        )
        ids.append(body["data"]["id"])

    canceled = subscription_event(
        "deleted", subscription, status="canceled", org=org.slug, created=now
    )
    assert await stripe_events.deliver(canceled) == "plan_changed"

    # The next request sees FREE: every category is still there, the 13th create is refused.
    listed = await _status(await org.get("/categories", query={"limit": 100}, scope="read"), 200)
    assert len(listed["data"]) == 12
    await _status(
        await org.post("/categories", json={"name": "One too many"}, scope="write"),
        402,
        "plan_limit_reached",
    )
    # The existing webhook stays, active, readable and editable; a new one needs STARTER.
    kept = await _status(await org.get(f"/webhooks/{webhook['id']}", scope="read"), 200)
    assert kept["data"]["active"] is True
    patched = await org.patch(f"/webhooks/{webhook['id']}", json={"description": "still here"})
    assert patched.status_code == 200
    await _status(await org.post("/webhooks", json=WEBHOOK), 403, "plan_required")
    summary = (await _status(await org.get("/billing", scope="read"), 200))["data"]
    assert summary["plan"] == "FREE"
    assert summary["usage"]["categories"] == 12 and summary["caps"]["categories"] == 10

    # Back under the cap, creates work again.
    for category_id in ids[:3]:
        assert (await org.delete(f"/categories/{category_id}", scope="write")).status_code == 204
    await _status(await org.post("/categories", json={"name": "Room again"}, scope="write"), 201)


async def test_an_upgrade_event_lifts_the_webhook_gate_on_the_next_request(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org: OrgClient = await org_factory(Plan.FREE)
    # The gate is asked first, so the org's plan sits in the API's cache before the upgrade.
    await _status(await org.post("/webhooks", json=WEBHOOK), 403, "plan_required")
    await stripe_events.deliver(
        subscription_event("created", unique("sub"), lookup_key="starter", org=org.slug)
    )
    created = await _status(await org.post("/webhooks", json=WEBHOOK), 201)
    assert created["data"]["secret"].startswith("whsec_")
    summary = (await _status(await org.get("/billing", scope="read"), 200))["data"]
    assert summary["plan"] == "STARTER"
    ensure_webhooks_allowed(Plan(summary["plan"]))  # the gate billing/ answers for


async def test_an_upgrade_lifts_the_category_cap_at_once(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    org: OrgClient = await org_factory(Plan.FREE)
    for n in range(9):  # 9 + the default category: FREE's cap
        await _status(await org.post("/categories", json={"name": f"T{n}"}, scope="write"), 201)
    await _status(
        await org.post("/categories", json={"name": "Eleventh"}, scope="write"),
        402,
        "plan_limit_reached",
    )
    await stripe_events.deliver(
        subscription_event("created", unique("sub"), lookup_key="pro", org=org.slug)
    )
    await _status(await org.post("/categories", json={"name": "Eleventh"}, scope="write"), 201)
