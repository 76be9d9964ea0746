"""``/api/v1/{org}/billing``: plan, caps and usage; Stripe Checkout and Customer Portal."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Quart, current_app
from quart_schema import document_response, validate_request
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from api.billing.schemas import BillingOut, CheckoutBody, UrlOut
from api.categories.models import Category
from api.http.binding import current_org, db, requires_scope
from api.questions.models import Question
from api.schemas import Envelope, ErrorBody
from api.webhooks.models import Webhook
from billing import service
from billing.checkout import StripeGateway
from billing.plans import Plan

billing = Blueprint("billing", __name__, url_prefix="/billing")
Result = tuple[dict[str, Any], int]
_GATEWAY = "stripe_gateway"


def stripe_gateway() -> StripeGateway:
    """The app's gateway, made on first use in the serving event loop (503 without a key)."""
    gateway: StripeGateway | None = current_app.extensions.get(_GATEWAY)
    if gateway is None:
        gateway = StripeGateway(current_app.extensions["settings"])
        current_app.extensions[_GATEWAY] = gateway
    return gateway


async def close_stripe_gateway(app: Quart) -> None:
    """At shutdown (``api/app.py``): close the gateway's HTTP client."""
    gateway: StripeGateway | None = app.extensions.pop(_GATEWAY, None)
    if gateway is not None:
        await gateway.close()


async def _usage(session: AsyncSession) -> service.Usage:
    categories = await session.scalar(
        select(func.count()).select_from(Category).where(Category.deleted_at.is_(None))
    )
    questions = await session.scalar(
        select(func.count()).select_from(Question).where(Question.deleted_at.is_(None))
    )
    webhooks = await session.scalar(
        select(func.count()).select_from(Webhook).where(Webhook.deleted_at.is_(None))
    )
    locales = len(current_org().locales)
    return service.Usage(categories or 0, questions or 0, webhooks or 0, locales)


@billing.get("")
@requires_scope("read")
@document_response(Envelope[BillingOut])
async def get_billing() -> Result:
    """The organization's plan, its caps, and its usage (live categories, questions, webhooks)."""
    usage = await _usage(db())
    return {"data": await service.billing_summary(db(), current_org().id, usage)}, 200


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
    org = current_org()
    url = await service.start_checkout(db(), org.id, org.slug, Plan(data.plan.upper()), gateway)
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
    return {"data": {"url": await service.open_portal(db(), current_org().id, gateway)}}, 201
