"""``POST /billing/stripe/webhook``: verified, stored once, applied before the answer (a
Dramatiq message sent after the commit, and the periodic re-drive, apply it if that fails).

No API key: Stripe signs the body instead (``Stripe-Signature``, checked by the ``stripe``
library against ``STRIPE_WEBHOOK_SECRET``). While no secret is configured every event is
refused with 503, so an unsigned event is never accepted.
"""

from __future__ import annotations

from typing import Any

import stripe
import structlog
from quart import Blueprint, current_app, request
from quart_schema import document_request, document_response, security_scheme

from api.billing.schemas import ReceivedOut, StripeEventIn
from api.http.binding import tenancy
from billing.errors import BillingNotConfigured, InvalidSignature
from billing.stripe_events import APPLY_ACTOR, QUEUE, apply_event, parse_event, store_event
from tenancy.db import shared_session
from tenancy.queue import enqueue_after_commit
from tenancy.settings import Settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)

stripe_webhook = Blueprint("stripe_webhook", __name__)
SIGNATURE_TOLERANCE_SECONDS = 300


def _webhook_secret() -> str:
    settings: Settings = current_app.extensions["settings"]
    secret = settings.stripe_webhook_secret
    value = secret.get_secret_value().strip() if secret is not None else ""
    if not value:
        raise BillingNotConfigured(
            "STRIPE_WEBHOOK_SECRET is not set: Stripe events are refused until it is."
        )
    return value


async def _apply_now(event_id: str) -> None:
    """Apply the stored event before answering, so the plan has changed when the 200 leaves
    (and this process drops its cached plan at once). If that fails, the message sent after
    the commit (or the periodic re-drive) applies it: applying is idempotent."""
    try:
        await apply_event(tenancy().engine, event_id)
    except Exception:
        log.warning("stripe_event_apply_deferred", event_id=event_id, exc_info=True)
        return
    tenancy().directory.clear()


@stripe_webhook.post("/billing/stripe/webhook")
@security_scheme([])
@document_request(StripeEventIn)
@document_response(ReceivedOut)
async def receive_stripe_event() -> tuple[dict[str, Any], int]:
    """Receive a Stripe event (signed with Stripe-Signature; no API key).

    Handled: checkout.session.completed, customer.subscription.created|updated|deleted;
    other types are answered 200 and ignored. A bad, missing or stale (older than 300 s)
    signature is 400 invalid_signature; 503 while STRIPE_WEBHOOK_SECRET is not set. The event
    is stored once by id and applied before the answer, in the order of its `created`.
    """
    secret = _webhook_secret()
    raw = await request.get_data(as_text=False)
    assert isinstance(raw, bytes)
    try:
        stripe.WebhookSignature.verify_header(
            raw,
            request.headers.get("Stripe-Signature"),
            secret,
            tolerance=SIGNATURE_TOLERANCE_SECONDS,
        )
    except (stripe.SignatureVerificationError, ValueError):
        raise InvalidSignature() from None
    event = parse_event(raw)
    if not event.handled:
        return {"received": True}, 200
    async with shared_session(tenancy().engine) as session:
        pending = await store_event(session, event)
        if pending:
            enqueue_after_commit(
                session, f"stripe-event:{event.id}", APPLY_ACTOR, event.id, queue=QUEUE
            )
        await commit(session)
    if pending:
        await _apply_now(event.id)
    return {"received": True}, 200
