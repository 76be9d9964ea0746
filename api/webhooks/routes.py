"""HTTP routes of webhooks: validate, call one service function, return the public shape."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_querystring, validate_request

from api.errors import ValidationErrorCode
from api.http import conditional_locks as locks
from api.http.binding import current_org, cursors, db, requires_scope
from api.http.conditional import conditional
from api.http.pagination import list_body
from api.schemas import Envelope, ListEnvelope, utc
from api.webhooks import service
from api.webhooks.schemas import (
    DeliveryOut,
    RecoverBody,
    RecoverResult,
    WebhookCreate,
    WebhookCreated,
    WebhookListQuery,
    WebhookOut,
    WebhookUpdate,
)

webhooks = Blueprint("webhooks", __name__, url_prefix="/webhooks")
Result = tuple[dict[str, Any], int]


def _after(kind: str, cursor: str | None) -> list[Any] | None:
    return cursors().decode(kind, cursor, error=ValidationErrorCode) if cursor else None


@webhooks.post("")
@requires_scope("admin")
@validate_request(WebhookCreate)
@document_response(Envelope[WebhookCreated], 201)
async def create_webhook(data: WebhookCreate) -> Result:
    """Create a webhook (STARTER plan or above); the secret is returned only here."""
    return {"data": await service.create_webhook(db(), current_org(), data)}, 201


@webhooks.get("")
@requires_scope("read")
@validate_querystring(WebhookListQuery)
@document_response(ListEnvelope[WebhookOut])
async def list_webhooks(query_args: WebhookListQuery) -> Result:
    """List webhooks, oldest first."""
    after = _after("webhooks", query_args.cursor)
    items, last = await service.list_webhooks(db(), limit=query_args.limit, after=after)
    cursor = cursors().encode("webhooks", last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@webhooks.get("/<webhook_id>")
@requires_scope("read")
@document_response(Envelope[WebhookOut])
async def get_webhook(webhook_id: str) -> Result:
    """Get a webhook (never its secret)."""
    return {"data": await service.get_webhook(db(), webhook_id)}, 200


@webhooks.patch("/<webhook_id>")
@requires_scope("admin")
@validate_request(WebhookUpdate)
@document_response(Envelope[WebhookOut])
@conditional(locks.WEBHOOK)
async def update_webhook(webhook_id: str, data: WebhookUpdate) -> Result:
    """Update any of url, events, active, description."""
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    return {"data": await service.update_webhook(db(), current_org(), webhook_id, changes)}, 200


@webhooks.delete("/<webhook_id>")
@requires_scope("admin")
@conditional(locks.WEBHOOK)
async def delete_webhook(webhook_id: str) -> tuple[str, int]:
    """Soft delete: no new deliveries, pending retries stop."""
    await service.delete_webhook(db(), current_org(), webhook_id)
    return "", 204


@webhooks.post("/<webhook_id>/test")
@requires_scope("admin")
@document_response(Envelope[DeliveryOut], 202)
async def test_webhook(webhook_id: str) -> Result:
    """Send a synthetic ping (``event: "ping"``)."""
    return {"data": await service.send_test(db(), current_org(), webhook_id)}, 202


@webhooks.get("/<webhook_id>/deliveries")
@requires_scope("read")
@validate_querystring(WebhookListQuery)
@document_response(ListEnvelope[DeliveryOut])
async def list_deliveries(webhook_id: str, query_args: WebhookListQuery) -> Result:
    """Delivery history of the webhook, newest first."""
    kind = f"deliveries:{webhook_id}"
    after = _after(kind, query_args.cursor)
    items, last = await service.list_deliveries(
        db(), webhook_id, limit=query_args.limit, after=after
    )
    cursor = cursors().encode(kind, last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@webhooks.get("/<webhook_id>/deliveries/<delivery_id>")
@requires_scope("read")
@document_response(Envelope[DeliveryOut])
async def get_delivery(webhook_id: str, delivery_id: str) -> Result:
    """One delivery of the webhook, with every attempt."""
    return {"data": await service.get_delivery(db(), webhook_id, delivery_id)}, 200


@webhooks.post("/<webhook_id>/deliveries/<delivery_id>/replay")
@requires_scope("admin")
@document_response(Envelope[DeliveryOut], 202)
async def replay_delivery(webhook_id: str, delivery_id: str) -> Result:
    """Re-fire a past delivery under a new delivery id (``replayOf`` names the original)."""
    delivery = await service.replay_delivery(db(), current_org(), webhook_id, delivery_id)
    return {"data": delivery}, 202


@webhooks.post("/<webhook_id>/recover")
@requires_scope("admin")
@validate_request(RecoverBody)
@document_response(Envelope[RecoverResult], 202)
async def recover_webhook(webhook_id: str, data: RecoverBody) -> Result:
    """Replay every failed delivery created since ``since`` (at most 14 days back)."""
    queued = await service.recover(db(), current_org(), webhook_id, utc(data.since))
    return {"data": {"queued": queued}}, 202
