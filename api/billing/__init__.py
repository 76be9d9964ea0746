"""``/api/v1/{org}/billing`` and ``/billing/stripe/webhook``: the HTTP side of ``billing/``."""
