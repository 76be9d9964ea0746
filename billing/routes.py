"""``/api/v1/{org}/billing``: plan, caps and usage; Stripe Checkout and Customer Portal."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_request

from api.schemas import Envelope, ErrorBody
from billing import service
from billing.checkout import stripe_gateway
from billing.plans import Plan
from billing.schemas import BillingOut, CheckoutBody, UrlOut
from tenancy.middleware import current_org, db, requires_scope

billing = Blueprint("billing", __name__, url_prefix="/billing")
Result = tuple[dict[str, Any], int]


@billing.get("")
@requires_scope("read")
@document_response(Envelope[BillingOut])
async def get_billing() -> Result:
    """The organization's plan, its caps, and its usage (live categories and questions)."""
    return {"data": await service.billing_summary(db(), current_org())}, 200


@billing.post("/checkout")
@requires_scope("admin")
@validate_request(CheckoutBody)
@document_response(Envelope[UrlOut], 201)
@document_response(ErrorBody, 502)
async def start_checkout(data: CheckoutBody) -> Result:
    """Start an upgrade: a Stripe Checkout Session URL for the plan.

    The plan becomes effective when Stripe reports the subscription (the webhook), not
    when this URL is created. An org that already has a subscription gets 409
    ``subscription_exists``: plan changes go through the Customer Portal.
    """
    gateway = stripe_gateway()
    url = await service.start_checkout(db(), current_org(), Plan(data.plan.upper()), gateway)
    return {"data": {"url": url}}, 201


@billing.post("/portal")
@requires_scope("admin")
@document_response(Envelope[UrlOut], 201)
@document_response(ErrorBody, 502)
async def open_portal() -> Result:
    """A Stripe Customer Portal URL (change plan, payment method, invoices, cancel).

    409 ``no_stripe_customer`` until a checkout has linked a Stripe customer to the org.
    """
    gateway = stripe_gateway()
    return {"data": {"url": await service.open_portal(db(), current_org(), gateway)}}, 201
