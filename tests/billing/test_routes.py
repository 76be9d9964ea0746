"""``/api/v1/{org}/billing``: plan, caps and usage; Checkout and Customer Portal sessions
created through the async stripe client against the local fake Stripe API."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from quart import Quart

from billing.checkout import IDEMPOTENCY_WINDOW_SECONDS, STRIPE_API_VERSION
from billing.plans import Plan
from tests.billing.conftest import (
    RETURN_URL,
    StripeSender,
    checkout_completed,
    subscription_event,
    unique,
)
from tests.fixtures.orgs import OrgClient
from tests.fixtures.stripe_api import FakeStripe


async def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, await response.get_data()
    body = await response.get_json()
    assert body["error"]["code"] == code
    assert set(body["error"]) == {"code", "message", "details"}
    return body["error"]


async def _category(org: OrgClient, name: str) -> str:
    response = await org.post("/categories", json={"name": name}, scope="write")
    assert response.status_code == 201, await response.get_data()
    category_id: str = (await response.get_json())["data"]["id"]
    return category_id


async def _question(org: OrgClient, category_id: str, title: str) -> str:
    body = {"title": title, "answer": "Yes.", "categoryId": category_id, "status": "draft"}
    response = await org.post("/questions", json=body, scope="write")
    assert response.status_code == 201, await response.get_data()
    question_id: str = (await response.get_json())["data"]["id"]
    return question_id


# ---- GET /billing --------------------------------------------------------------------------


async def test_billing_shows_plan_caps_and_live_usage(org: OrgClient) -> None:
    first = await _category(org, "Accounts")
    await _category(org, "Payments")
    kept = await _question(org, first, "How do I reset my password?")
    dropped = await _question(org, first, "How do I close my account?")
    assert (await org.delete(f"/questions/{dropped}", scope="write")).status_code == 204
    response = await org.get("/billing", scope="read")
    assert response.status_code == 200
    assert (await response.get_json())["data"] == {
        "plan": "STARTER",
        "caps": {
            "categories": 50,
            "questions": 2000,
            "webhooks": True,
            "webhookLimit": 10,
            "locales": 5,
        },
        # the default category counts; the soft-deleted question does not; `en` is enabled
        "usage": {"categories": 3, "questions": 1, "webhooks": 0, "locales": 1},
        "customerLinked": False,
        "subscriptionStatus": None,
    }
    assert kept


async def test_billing_of_an_unlimited_plan_has_null_caps(org_factory: Any) -> None:
    org = await org_factory(Plan.ENTERPRISE)
    data = (await (await org.get("/billing", scope="read")).get_json())["data"]
    assert data["caps"] == {
        "categories": None,
        "questions": None,
        "webhooks": True,
        "webhookLimit": 500,
        "locales": 100,
    }


async def test_billing_needs_a_key_of_the_org(
    client: Any, org: OrgClient, other_org: OrgClient
) -> None:
    await _error(await client.get(f"/api/v1/{org.slug}/billing"), 401, "unauthorized")
    foreign = {"Authorization": f"Bearer {other_org.keys['admin']}"}
    for method, path in (("GET", ""), ("POST", "/checkout"), ("POST", "/portal")):
        response = await client.open(
            f"/api/v1/{org.slug}/billing{path}",
            method=method,
            headers=foreign,
            json={"plan": "pro"} if path == "/checkout" else None,
        )
        await _error(response, 404, "org_not_found")


# ---- POST /billing/checkout ----------------------------------------------------------------


async def test_checkout_creates_a_session_for_the_price_with_that_lookup_key(
    org_factory: Any, stripe_api: FakeStripe
) -> None:
    org = await org_factory(Plan.FREE)
    response = await org.post("/billing/checkout", json={"plan": "pro"})
    assert response.status_code == 201, await response.get_data()
    url = (await response.get_json())["data"]["url"]
    assert url.startswith("https://checkout.stripe.test/c/pay/cs_test_")

    [lookup] = stripe_api.calls("/v1/prices")
    assert lookup.method == "GET"
    assert lookup.params["lookup_keys[0]"] == "pro"
    assert lookup.params["active"] == "true"
    [created] = stripe_api.calls("/v1/checkout/sessions")
    assert created.params["mode"] == "subscription"
    assert created.params["line_items[0][price]"] == "price_pro_1"
    assert created.params["line_items[0][quantity]"] == "1"
    assert created.params["client_reference_id"] == org.slug
    assert created.params["subscription_data[metadata][org]"] == org.slug
    assert created.params["success_url"] == f"{RETURN_URL}?checkout=success"
    assert created.params["cancel_url"] == f"{RETURN_URL}?checkout=canceled"
    assert "customer" not in created.params
    # Pinned API version and an idempotency key on every call.
    for call in stripe_api.requests:
        assert call.headers["Stripe-Version"] == STRIPE_API_VERSION
    assert created.headers["Idempotency-Key"].startswith("faq-checkout-")
    # The plan changes only when Stripe reports the subscription.
    data = (await (await org.get("/billing", scope="read")).get_json())["data"]
    assert data["plan"] == "FREE"


async def test_a_double_submit_gets_the_same_checkout_session(
    org_factory: Any, stripe_api: FakeStripe
) -> None:
    org = await org_factory(Plan.FREE)
    if time.time() % IDEMPOTENCY_WINDOW_SECONDS > IDEMPOTENCY_WINDOW_SECONDS - 2:
        await asyncio.sleep(2)  # both clicks inside one idempotency window
    urls = []
    for _ in range(2):
        response = await org.post("/billing/checkout", json={"plan": "starter"})
        assert response.status_code == 201
        urls.append((await response.get_json())["data"]["url"])
    assert urls[0] == urls[1]
    keys = {c.headers["Idempotency-Key"] for c in stripe_api.calls("/v1/checkout/sessions")}
    assert len(keys) == 1


async def test_checkout_reuses_the_linked_customer(
    org_factory: Any, stripe_api: FakeStripe, stripe_events: StripeSender
) -> None:
    org = await org_factory(Plan.FREE)
    customer = unique("cus")
    await stripe_events.deliver(checkout_completed(org.slug, customer))
    response = await org.post("/billing/checkout", json={"plan": "enterprise"})
    assert response.status_code == 201
    [created] = stripe_api.calls("/v1/checkout/sessions")
    assert created.params["customer"] == customer
    assert created.params["line_items[0][price]"] == "price_enterprise_1"


async def test_checkout_needs_the_admin_scope(org: OrgClient, stripe_api: FakeStripe) -> None:
    for scope in ("read", "write"):
        response = await org.post("/billing/checkout", json={"plan": "pro"}, scope=scope)
        await _error(response, 403, "insufficient_scope")
        await _error(await org.post("/billing/portal", scope=scope), 403, "insufficient_scope")
    assert stripe_api.requests == []


async def test_checkout_validates_the_plan(org: OrgClient, stripe_api: FakeStripe) -> None:
    for body in ({"plan": "gold"}, {"plan": "PRO"}, {"plan": "free"}, {}, {"plan": "pro", "x": 1}):
        error = await _error(
            await org.post("/billing/checkout", json=body), 400, "validation_failed"
        )
        assert error["details"]
    assert stripe_api.requests == []


async def test_checkout_is_refused_while_a_subscription_exists(
    org_factory: Any, stripe_api: FakeStripe, stripe_events: StripeSender
) -> None:
    org = await org_factory(Plan.FREE)
    await stripe_events.deliver(subscription_event("created", unique("sub"), org=org.slug))
    error = await _error(
        await org.post("/billing/checkout", json={"plan": "enterprise"}), 409, "subscription_exists"
    )
    assert "portal" in error["message"].lower()
    assert stripe_api.calls("/v1/checkout/sessions") == []


async def test_checkout_without_a_price_for_the_lookup_key_is_503(
    org: OrgClient, stripe_api: FakeStripe
) -> None:
    del stripe_api.prices["enterprise"]
    error = await _error(
        await org.post("/billing/checkout", json={"plan": "enterprise"}),
        503,
        "billing_not_configured",
    )
    assert "'enterprise'" in error["message"]
    assert stripe_api.calls("/v1/checkout/sessions") == []


async def test_a_stripe_failure_is_502(org: OrgClient, stripe_api: FakeStripe) -> None:
    stripe_api.fail_with = 400
    await _error(
        await org.post("/billing/checkout", json={"plan": "pro"}), 502, "stripe_unavailable"
    )
    assert len(stripe_api.requests) == 1  # a 400 from Stripe is not retried


# ---- POST /billing/portal ------------------------------------------------------------------


async def test_portal_without_a_linked_customer_is_409(
    org: OrgClient, stripe_api: FakeStripe
) -> None:
    error = await _error(await org.post("/billing/portal"), 409, "no_stripe_customer")
    assert "checkout" in error["message"]
    assert stripe_api.requests == []


async def test_portal_returns_a_session_url_for_the_linked_customer(
    org_factory: Any, stripe_api: FakeStripe, stripe_events: StripeSender
) -> None:
    org = await org_factory(Plan.FREE)
    customer = unique("cus")
    await stripe_events.deliver(checkout_completed(org.slug, customer))
    response = await org.post("/billing/portal")
    assert response.status_code == 201, await response.get_data()
    url = (await response.get_json())["data"]["url"]
    assert url.startswith("https://billing.stripe.test/p/session/bps_test_")
    [created] = stripe_api.calls("/v1/billing_portal/sessions")
    assert created.params == {"customer": customer, "return_url": RETURN_URL}
    assert created.headers["Stripe-Version"] == STRIPE_API_VERSION
    assert created.headers["Idempotency-Key"].startswith("faq-portal-")


# ---- without STRIPE_API_KEY ----------------------------------------------------------------


async def test_checkout_and_portal_are_503_without_an_api_key(
    unconfigured_app: Quart, org: OrgClient, stripe_api: FakeStripe
) -> None:
    client = unconfigured_app.test_client()
    headers = org.headers("admin")
    for path, body in (("/checkout", {"plan": "pro"}), ("/portal", None)):
        response = await client.post(
            f"/api/v1/{org.slug}/billing{path}", json=body, headers=headers
        )
        error = await _error(response, 503, "billing_not_configured")
        assert "STRIPE_API_KEY" in error["message"]
    # Reading the plan needs no Stripe at all.
    response = await client.get(f"/api/v1/{org.slug}/billing", headers=org.headers("read"))
    assert response.status_code == 200
    assert stripe_api.requests == []
