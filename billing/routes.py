"""``/api/v1/{org}/billing``: plan, caps and usage; Stripe Checkout and Customer Portal."""

from __future__ import annotations

from quart import Blueprint

billing = Blueprint("billing", __name__)
