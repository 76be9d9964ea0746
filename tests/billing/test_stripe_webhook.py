"""``POST /billing/stripe/webhook``: signatures, the missing secret, storage once by id, and
the real enqueue-then-apply path through a Dramatiq worker."""

from __future__ import annotations

import time
from typing import Any

import orjson
from quart import Quart
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.models import StripeEvent
from billing.plans import Plan
from tenancy.db import shared_session
from tests.billing.conftest import (
    StripeSender,
    checkout_completed,
    event,
    sign,
    subscription_event,
    unique,
    wait_until,
)
from tests.fixtures.orgs import OrgClient

ERROR_KEYS = {"code", "message", "details"}


async def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, await response.get_data()
    body = await response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS
    assert body["error"]["code"] == code
    return body["error"]


async def _count(engine: AsyncEngine, event_id: str) -> int:
    async with shared_session(engine) as session:
        return int(
            await session.scalar(
                select(func.count()).select_from(StripeEvent).where(StripeEvent.id == event_id)
            )
            or 0
        )


async def test_missing_secret_refuses_every_event_with_503(
    unconfigured_app: Quart, stripe_events: StripeSender, engine: AsyncEngine, org: OrgClient
) -> None:
    body = subscription_event("created", unique("sub"), org=org.slug)
    unconfigured = unconfigured_app.test_client()
    for signature in (sign(orjson.dumps(body)), ""):  # signed, and unsigned
        response = await stripe_events.post(body, signature=signature, client=unconfigured)
        error = await _error(response, 503, "billing_not_configured")
        assert "STRIPE_WEBHOOK_SECRET" in error["message"]
    assert await _count(engine, body["id"]) == 0


async def test_bad_signatures_are_400_invalid_signature(
    stripe_events: StripeSender, engine: AsyncEngine, org: OrgClient
) -> None:
    body = subscription_event("created", unique("sub"), org=org.slug)
    raw = orjson.dumps(body)
    now = int(time.time())
    good = sign(raw, timestamp=now)
    bad_headers = [
        sign(raw, secret="whsec_someone_else"),  # wrong secret
        good.replace("v1=", "v0="),  # no v1 scheme
        f"t={now},v1=" + "0" * 64,  # wrong digest
        "garbage",  # unparseable
        "",  # no header at all
    ]
    for header in bad_headers:
        await _error(await stripe_events.post(raw, signature=header), 400, "invalid_signature")
    # A body changed after signing does not verify either.
    tampered = raw.replace(b'"active"', b'"trialing"')
    await _error(await stripe_events.post(tampered, signature=good), 400, "invalid_signature")
    assert await _count(engine, body["id"]) == 0
    # The same event, correctly signed, is accepted: the refusals above were the signatures.
    response = await stripe_events.post(raw, signature=good)
    assert response.status_code == 200
    assert await _count(engine, body["id"]) == 1


async def test_stale_signature_is_400_and_fresh_one_is_accepted(
    stripe_events: StripeSender, engine: AsyncEngine, org: OrgClient
) -> None:
    body = subscription_event("created", unique("sub"), org=org.slug)
    stale = int(time.time()) - 301
    await _error(await stripe_events.post(body, timestamp=stale), 400, "invalid_signature")
    assert await _count(engine, body["id"]) == 0
    response = await stripe_events.post(body, timestamp=int(time.time()) - 200)
    assert response.status_code == 200
    assert await response.get_json() == {"received": True}
    assert await _count(engine, body["id"]) == 1


async def test_unknown_event_types_are_acknowledged_and_change_nothing(
    stripe_events: StripeSender, engine: AsyncEngine, org_factory: Any
) -> None:
    free = await org_factory(Plan.FREE)
    body = event(
        "invoice.paid",
        {"id": unique("in"), "object": "invoice", "metadata": {"org": free.slug}},
    )
    response = await stripe_events.post(body)
    assert response.status_code == 200
    assert await response.get_json() == {"received": True}
    assert await _count(engine, body["id"]) == 0
    summary = await (await free.get("/billing", scope="read")).get_json()
    assert summary["data"]["plan"] == "FREE"


async def test_a_signed_body_that_is_not_an_event_is_400(stripe_events: StripeSender) -> None:
    response = await stripe_events.post(orjson.dumps({"type": "customer.subscription.created"}))
    error = await _error(response, 400, "validation_failed")
    assert error["details"] == [{"field": "id", "issue": "required"}]
    await _error(await stripe_events.post(b"[1, 2]"), 400, "validation_failed")
    huge = {"id": unique("evt"), "type": "customer.subscription.created", "created": 10**18}
    error = await _error(await stripe_events.post(orjson.dumps(huge)), 400, "validation_failed")
    assert error["details"][0]["field"] == "created"


async def test_an_event_is_stored_once_by_id(
    stripe_events: StripeSender, engine: AsyncEngine, org: OrgClient
) -> None:
    body = checkout_completed(org.slug, unique("cus"))
    for _ in range(3):  # Stripe retries: every delivery is acknowledged
        response = await stripe_events.post(body)
        assert response.status_code == 200
    assert await _count(engine, body["id"]) == 1
    stored = await stripe_events.stored(body["id"])
    assert stored is not None
    assert stored.type == "checkout.session.completed"
    assert int(stored.created.timestamp()) == body["created"]
    assert stored.payload == body


async def test_the_plan_has_changed_when_the_endpoint_answers(
    stripe_events: StripeSender, org_factory: Any
) -> None:
    """A client that sends the event and at once uses the new plan sees it (no waiting)."""
    free = await org_factory(Plan.FREE)
    webhook = {"url": "https://127.0.0.1:9/hooks/faq", "events": ["question.created"]}
    assert (await free.post("/webhooks", json=webhook)).status_code == 403  # caches FREE
    body = subscription_event("created", unique("sub"), lookup_key="starter", org=free.slug)
    response = await stripe_events.post(body)
    assert response.status_code == 200
    assert await response.get_json() == {"received": True}
    assert (await free.post("/webhooks", json=webhook)).status_code == 201
    stored = await stripe_events.stored(body["id"])
    assert stored is not None and stored.outcome == "plan_changed"
    cancelled = subscription_event(
        "updated", body["data"]["object"]["id"], status="canceled", org=free.slug
    )
    assert (await stripe_events.post(cancelled)).status_code == 200
    summary = (await (await free.get("/billing", scope="read")).get_json())["data"]
    assert summary["plan"] == "FREE"
    assert (await free.post("/webhooks", json=webhook)).status_code == 403


async def test_the_endpoint_enqueues_and_the_worker_applies(
    stripe_events: StripeSender, org_factory: Any, billing_worker: Any, deferred_apply: None
) -> None:
    """No API key, signed by Stripe: stored, enqueued after commit, applied by the actor
    in a real Dramatiq worker on the real Redis broker (when the endpoint's own apply
    could not run)."""
    free = await org_factory(Plan.FREE)
    webhook = {"url": "https://127.0.0.1:9/hooks/faq", "events": ["question.created"]}
    response = await free.post("/webhooks", json=webhook)  # caches the FREE plan in the API
    assert response.status_code == 403
    customer = unique("cus")
    linked = checkout_completed(free.slug, customer)
    upgraded = subscription_event("created", unique("sub"), org=free.slug, customer=customer)
    for body in (linked, upgraded):
        response = await stripe_events.post(body)
        assert response.status_code == 200

    async def applied() -> bool:
        stored = [await stripe_events.stored(b["id"]) for b in (linked, upgraded)]
        return all(s is not None and s.processed_at is not None for s in stored)

    await wait_until(applied)
    summary = (await (await free.get("/billing", scope="read")).get_json())["data"]
    assert summary["plan"] == "PRO"
    assert summary["customerLinked"] is True
    assert summary["subscriptionStatus"] == "active"
    # Applied in the worker's own engine and event loop: the API drops its cached plan on
    # NOTIFY, so the webhook gate opens on the next request.
    assert (await free.post("/webhooks", json=webhook)).status_code == 201


async def test_the_redrive_is_a_periodic_job_on_the_billing_queue() -> None:
    import tasks.actors  # noqa: F401  (what `faq worker` and `faq scheduler` import)
    from tasks.billing import apply_stripe_event
    from tasks.jobs import JOBS
    from tasks.registry import ACTORS

    job = JOBS["stripe-events-redrive"]
    assert job.period_seconds() == 60
    assert job.queue == "billing"
    assert ACTORS[job.actor_name].queue == "billing"
    assert ACTORS["billing.apply_stripe_event"].fn is apply_stripe_event


async def test_openapi_documents_the_stripe_webhook_without_an_api_key(client: Any) -> None:
    spec = await (await client.get("/openapi.json")).get_json()
    operation = spec["paths"]["/billing/stripe/webhook"]["post"]
    assert operation["security"] == []
    assert operation["summary"]
    for path in ("", "/checkout", "/portal"):
        assert f"/api/v1/{{org}}/billing{path}" in spec["paths"]
