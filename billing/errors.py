"""Errors of billing routes and the Stripe webhook (rendered by the one handler of ``api.app``)."""

from __future__ import annotations

from api.errors import ApiError


class InvalidSignature(ApiError):
    status = 400
    code = "invalid_signature"
    message = "The Stripe-Signature header does not verify (bad, missing or stale)."


class BillingNotConfigured(ApiError):
    status = 503
    code = "billing_not_configured"
    message = "Billing is not configured on this server."


class NoStripeCustomer(ApiError):
    status = 409
    code = "no_stripe_customer"
    message = (
        "This organization has no Stripe customer yet: start a subscription with "
        "POST /billing/checkout first."
    )


class SubscriptionExists(ApiError):
    status = 409
    code = "subscription_exists"
    message = (
        "This organization already has a Stripe subscription: change or cancel it in the "
        "Customer Portal (POST /billing/portal)."
    )


class StripeUnavailable(ApiError):
    status = 502
    code = "stripe_unavailable"
    message = "Stripe could not be reached or refused the request; retry shortly."
