"""Billing tests: an app configured for Stripe (webhook secret, API key, the local fake Stripe
API), one without, events signed exactly as Stripe signs them, and a real Dramatiq worker."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import dramatiq
import orjson
import pytest
from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.models import StripeEvent
from billing.stripe_events import apply_event
from tenancy.db import shared_session
from tenancy.settings import Settings
from tests.fixtures.stripe_api import API_KEY, FakeStripe, stripe_api, stripe_api_server

__all__ = ["stripe_api", "stripe_api_server"]

WEBHOOK_SECRET = "whsec_test_billing_0123456789abcdef"
RETURN_URL = "https://app.example.test/settings/billing"
_ids = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}_test{time.time_ns()}{next(_ids)}"


@pytest.fixture(scope="session")
async def billing_app(stripe_api_server: FakeStripe) -> AsyncIterator[Quart]:
    """The app with Stripe configured (its API base is the local fake)."""
    from api.app import create_app

    settings = Settings(
        stripe_webhook_secret=WEBHOOK_SECRET,
        stripe_api_key=API_KEY,
        stripe_api_base=stripe_api_server.url,
        faq_billing_return_url=RETURN_URL,
    )
    app = create_app(settings)
    async with app.test_app():
        yield app


@pytest.fixture(scope="session")
async def unconfigured_app() -> AsyncIterator[Quart]:
    """The app as deployed before ops set STRIPE_WEBHOOK_SECRET and STRIPE_API_KEY."""
    from api.app import create_app

    app = create_app(Settings(stripe_webhook_secret=None, stripe_api_key=None))
    async with app.test_app():
        yield app


@pytest.fixture
def client(billing_app: Quart) -> Any:
    """Org fixtures (``org``, ``org_factory``) talk to the Stripe-configured app."""
    return billing_app.test_client()


# ---- events, signed as Stripe signs them ---------------------------------------------------


def sign(payload: bytes, secret: str = WEBHOOK_SECRET, timestamp: int | None = None) -> str:
    """``Stripe-Signature``: ``t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<payload>">``."""
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def event(kind: str, obj: dict[str, Any], *, created: int | None = None) -> dict[str, Any]:
    return {
        "id": unique("evt"),
        "object": "event",
        "api_version": "2026-10-28.endive",
        "created": int(time.time()) if created is None else created,
        "livemode": False,
        "pending_webhooks": 1,
        "type": kind,
        "data": {"object": obj},
    }


def checkout_completed(org_slug: str, customer: str, **kw: Any) -> dict[str, Any]:
    return event(
        "checkout.session.completed",
        {
            "id": unique("cs"),
            "object": "checkout.session",
            "mode": "subscription",
            "status": "complete",
            "client_reference_id": org_slug,
            "customer": customer,
            "subscription": unique("sub"),
        },
        **kw,
    )


def subscription_event(
    kind: str,
    subscription_id: str,
    *,
    status: str = "active",
    lookup_key: str | None = "pro",
    org: str | None = None,
    customer: str | None = None,
    created: int | None = None,
) -> dict[str, Any]:
    """``customer.subscription.<kind>`` with one item whose price has ``lookup_key``."""
    return event(
        f"customer.subscription.{kind}",
        {
            "id": subscription_id,
            "object": "subscription",
            "status": status,
            "customer": customer or unique("cus"),
            "metadata": {"org": org} if org else {},
            "items": {
                "object": "list",
                "data": [
                    {
                        "id": unique("si"),
                        "object": "subscription_item",
                        "price": {
                            "id": unique("price"),
                            "object": "price",
                            "lookup_key": lookup_key,
                        },
                        "quantity": 1,
                    }
                ],
            },
        },
        created=created,
    )


@dataclass
class StripeSender:
    """Posts events to ``/billing/stripe/webhook`` and applies them like the actor does."""

    client: Any
    engine: AsyncEngine

    async def post(
        self,
        body: dict[str, Any] | bytes,
        *,
        secret: str = WEBHOOK_SECRET,
        timestamp: int | None = None,
        signature: str | None = None,
        client: Any = None,
    ) -> Any:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        headers = {"Content-Type": "application/json"}
        header = signature if signature is not None else sign(raw, secret, timestamp)
        if header:
            headers["Stripe-Signature"] = header
        return await (client or self.client).post(
            "/billing/stripe/webhook", data=raw, headers=headers
        )

    async def deliver(self, body: dict[str, Any]) -> str | None:
        """Post the event (200 expected), then run the actor's apply function on it."""
        response = await self.post(body)
        assert response.status_code == 200, await response.get_data()
        assert await response.get_json() == {"received": True}
        return await apply_event(self.engine, body["id"])

    async def stored(self, event_id: str) -> StripeEvent | None:
        async with shared_session(self.engine) as session:
            return (
                await session.execute(select(StripeEvent).where(StripeEvent.id == event_id))
            ).scalar_one_or_none()


@pytest.fixture
def stripe_events(client: Any, engine: AsyncEngine) -> StripeSender:
    return StripeSender(client, engine)


@pytest.fixture
def deferred_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint stores and enqueues but does not apply before answering (as when that
    apply failed): what the actor and the re-drive must then do."""
    import api.billing.stripe_webhook

    async def not_now(event_id: str) -> None:
        return None

    monkeypatch.setattr(api.billing.stripe_webhook, "_apply_now", not_now)


# ---- a real Dramatiq worker on the real Redis broker ---------------------------------------


@pytest.fixture
def billing_worker() -> Iterator[dramatiq.Worker]:
    """A worker consuming the billing queue, as ``faq worker`` does, for one test."""
    from tasks.broker import configure_worker_broker

    broker = configure_worker_broker()  # declares every actor, as `faq worker` does

    worker = dramatiq.Worker(broker, queues={"billing"}, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop(timeout=10_000)


async def wait_until(predicate: Any, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)
