"""Billing's errors: plan caps and the STARTER gate, billing routes and the Stripe webhook."""

from __future__ import annotations

from tenancy.errors import ServiceError


class PlanRequired(ServiceError):
    status = 403
    code = "plan_required"
    message = "This operation requires the STARTER plan or above."


class PlanLimitReached(ServiceError):
    status = 402
    code = "plan_limit_reached"
    message = "The organization reached the cap of its plan."


class InvalidSignature(ServiceError):
    status = 400
    code = "invalid_signature"
    message = "The Stripe-Signature header does not verify (bad, missing or stale)."


class BillingNotConfigured(ServiceError):
    status = 503
    code = "billing_not_configured"
    message = "Billing is not configured on this server."


class NoStripeCustomer(ServiceError):
    status = 409
    code = "no_stripe_customer"
    message = (
        "This organization has no Stripe customer yet: start a subscription with "
        "POST /billing/checkout first."
    )


class SubscriptionExists(ServiceError):
    status = 409
    code = "subscription_exists"
    message = (
        "This organization already has a Stripe subscription: change or cancel it in the "
        "Customer Portal (POST /billing/portal)."
    )


class StripeUnavailable(ServiceError):
    status = 502
    code = "stripe_unavailable"
    message = "Stripe could not be reached or refused the request; retry shortly."
