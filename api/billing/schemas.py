"""Request and response models of billing routes and the Stripe webhook."""

from __future__ import annotations

from typing import Any, Literal

from api.schemas import RequestBody, ResponseModel


class CheckoutBody(RequestBody):
    plan: Literal["starter", "pro", "enterprise"]


class CapsOut(ResponseModel):
    categories: int | None  # null: unlimited
    questions: int | None
    webhooks: bool  # may create webhooks at all
    webhook_limit: int  # live webhooks the plan allows (0 on FREE)
    locales: int | None  # enabled locales, the default included; null: unlimited


class UsageOut(ResponseModel):
    categories: int
    questions: int
    webhooks: int
    locales: int


class BillingOut(ResponseModel):
    plan: Literal["FREE", "STARTER", "PRO", "ENTERPRISE"]
    caps: CapsOut
    usage: UsageOut
    customer_linked: bool
    subscription_status: str | None


class UrlOut(ResponseModel):
    url: str


class StripeEventIn(ResponseModel):
    """A Stripe event as Stripe sends it (only these fields are read here)."""

    id: str
    type: str
    created: int
    data: dict[str, Any]


class ReceivedOut(ResponseModel):
    received: bool
