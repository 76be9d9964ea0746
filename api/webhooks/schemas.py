"""Request and response models of webhooks and deliveries, and their public shapes."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from api.schemas import QueryArgs, RequestBody, ResponseModel, Timestamp
from api.webhooks.models import Delivery, Webhook
from api.webhooks.signing import delivery_body
from tenancy.clock import iso

Url = Annotated[str, Field(min_length=1, max_length=2048)]
EventName = Annotated[str, Field(min_length=1, max_length=40)]
Events = Annotated[list[EventName], Field(min_length=1, max_length=100)]
Description = Annotated[str, Field(max_length=500)]


class WebhookCreate(RequestBody):
    url: Url
    events: Events
    description: Description | None = None


class WebhookUpdate(RequestBody):
    url: Url | None = None
    events: Events | None = None
    active: bool | None = None
    description: Description | None = None


class RecoverBody(RequestBody):
    since: Timestamp


class WebhookListQuery(QueryArgs):
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)


class WebhookOut(ResponseModel):
    id: str
    url: str
    events: list[str]
    active: bool
    description: str | None
    delivery_count: int
    created_at: str
    updated_at: str


class WebhookCreated(WebhookOut):
    secret: str


class AttemptOut(ResponseModel):
    at: str
    response_status: int | None
    duration_ms: int | None
    error: str | None


# The public keys of an attempt (CONTRACT section 6); the stored record also keeps the first
# 2 KB of the answer (``responseBody``) for operators.
ATTEMPT_KEYS = ("at", "responseStatus", "durationMs", "error")


class DeliveryOut(ResponseModel):
    id: str
    webhook_id: str
    event: str
    status: str
    attempts: list[AttemptOut]
    next_attempt_at: str | None
    replay_of: str | None
    payload: dict[str, Any] | None
    created_at: str


class RecoverResult(ResponseModel):
    queued: int


def webhook_public(w: Webhook) -> dict[str, Any]:
    """The webhook as GET returns it (never the secret)."""
    return {
        "id": w.id,
        "url": w.url,
        "events": list(w.events),
        "active": w.active,
        "description": w.description,
        "deliveryCount": w.delivery_count,
        "createdAt": iso(w.created_at),
        "updatedAt": iso(w.updated_at),
    }


def delivery_public(d: Delivery | Any) -> dict[str, Any]:
    return {
        "id": d.id,
        "webhookId": d.webhook_id,
        "event": d.event,
        "status": d.status,
        "attempts": [{key: a.get(key) for key in ATTEMPT_KEYS} for a in d.attempts],
        "nextAttemptAt": iso(d.next_attempt_at) if d.status == "pending" else None,
        "replayOf": d.replay_of,
        # The exact body last sent (before any attempt, the body to be sent), derived.
        "payload": delivery_body(d.id, d.event, d.data, d.sent_at),
        "createdAt": iso(d.created_at),
    }
