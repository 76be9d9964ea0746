"""Calls to the Stripe API: Checkout Sessions and Customer Portal sessions.

Async calls of the ``stripe`` library (never blocking the event loop), on a pinned API version,
with idempotency keys. ``STRIPE_API_BASE`` points the client elsewhere (the tests' local fake).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import orjson
import stripe
import structlog

from billing.errors import BillingNotConfigured, StripeUnavailable
from billing.plans import Plan, lookup_key_for
from tenancy.settings import Settings

log = structlog.get_logger(__name__)

# The API version this code was written and tested against (stripe 16.x). Pinned so that a
# library upgrade or a change of the account's default version never changes the payloads.
STRIPE_API_VERSION = "2026-10-28.endive"
STRIPE_TIMEOUT_SECONDS = 15.0
STRIPE_NETWORK_RETRIES = 2
# A double submit within this window gets the same session back (same idempotency key).
IDEMPOTENCY_WINDOW_SECONDS = 60


def _with_query(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


class StripeGateway:
    def __init__(self, settings: Settings) -> None:
        if settings.stripe_api_key is None or not settings.stripe_api_key.get_secret_value():
            raise BillingNotConfigured("STRIPE_API_KEY is not set: checkout and portal are off.")
        self._http = stripe.AIOHTTPClient(timeout=STRIPE_TIMEOUT_SECONDS)
        bases: dict[str, str] = {}
        if settings.stripe_api_base:
            bases["api"] = settings.stripe_api_base.rstrip("/")
        self._client = stripe.StripeClient(
            settings.stripe_api_key.get_secret_value(),
            stripe_version=STRIPE_API_VERSION,
            base_addresses=bases,  # type: ignore[arg-type]
            max_network_retries=STRIPE_NETWORK_RETRIES,
            http_client=self._http,
        )
        self._return_url = settings.faq_billing_return_url

    async def close(self) -> None:
        await self._http.close_async()  # type: ignore[no-untyped-call]

    @staticmethod
    def _idempotency_key(purpose: str, org_id: str, params: dict[str, Any]) -> str:
        window = int(time.time() // IDEMPOTENCY_WINDOW_SECONDS)
        digest = hashlib.sha256(
            orjson.dumps([params, window], option=orjson.OPT_SORT_KEYS)
        ).hexdigest()
        return f"faq-{purpose}-{org_id}-{digest[:32]}"

    async def _price_id(self, plan: Plan) -> str:
        lookup_key = lookup_key_for(plan)
        prices = await self._client.v1.prices.list_async(
            {"lookup_keys": [lookup_key], "active": True, "limit": 1}
        )
        if not prices.data:
            raise BillingNotConfigured(
                f"No active Stripe price has the lookup key {lookup_key!r}; see docs/billing.md."
            )
        return prices.data[0].id

    async def checkout_url(
        self, *, org_id: str, org_slug: str, plan: Plan, customer_id: str | None
    ) -> str:
        """A Checkout Session for the price whose lookup key names ``plan``."""
        try:
            price_id = await self._price_id(plan)
            params: dict[str, Any] = {
                "mode": "subscription",
                "line_items": [{"price": price_id, "quantity": 1}],
                "client_reference_id": org_slug,
                "metadata": {"org": org_slug},
                "subscription_data": {"metadata": {"org": org_slug}},
            }
            if customer_id:
                params["customer"] = customer_id
            if self._return_url:
                params["success_url"] = _with_query(self._return_url, "checkout=success")
                params["cancel_url"] = _with_query(self._return_url, "checkout=canceled")
            session = await self._client.v1.checkout.sessions.create_async(
                params,  # type: ignore[arg-type]
                {"idempotency_key": self._idempotency_key("checkout", org_id, params)},
            )
        except stripe.StripeError as exc:
            log.error("stripe_checkout_failed", org=org_slug, error=str(exc))
            raise StripeUnavailable() from None
        if not session.url:
            raise StripeUnavailable("Stripe returned a Checkout Session without a URL.")
        return session.url

    async def portal_url(self, *, org_id: str, customer_id: str) -> str:
        """A Customer Portal session of the org's Stripe customer."""
        params: dict[str, Any] = {"customer": customer_id}
        if self._return_url:
            params["return_url"] = self._return_url
        try:
            session = await self._client.v1.billing_portal.sessions.create_async(
                params,  # type: ignore[arg-type]
                {"idempotency_key": self._idempotency_key("portal", org_id, params)},
            )
        except stripe.StripeError as exc:
            log.error("stripe_portal_failed", org_id=org_id, error=str(exc))
            raise StripeUnavailable() from None
        return session.url
