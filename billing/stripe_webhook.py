"""``POST /billing/stripe/webhook``: verified, stored once, applied by a Dramatiq actor."""

from __future__ import annotations

from quart import Blueprint

stripe_webhook = Blueprint("stripe_webhook", __name__)
