"""``/api/v1/{org}/keys`` (admin): list, create (the key shown once), revoke (issue 16)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_querystring, validate_request

from api.http.binding import current_org, cursors, db, requires_scope, tenancy
from api.http.pagination import list_body
from api.keys import service
from api.keys.schemas import KeyCreate, KeyCreated, KeyListQuery, KeyOut
from api.schemas import Envelope, ListEnvelope
from tenancy.transactions import after_commit

keys = Blueprint("keys", __name__, url_prefix="/keys")
Result = tuple[dict[str, Any], int]


@keys.get("")
@requires_scope("admin")
@validate_querystring(KeyListQuery)
@document_response(ListEnvelope[KeyOut])
async def list_keys(query_args: KeyListQuery) -> Result:
    """The organization's API keys, revoked ones included, oldest first (never a key or its
    hash)."""
    after = cursors().decode("keys", query_args.cursor) if query_args.cursor else None
    items, last = await service.list_keys(db(), current_org(), limit=query_args.limit, after=after)
    cursor = cursors().encode("keys", last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@keys.post("")
@requires_scope("admin")
@validate_request(KeyCreate)
@document_response(Envelope[KeyCreated], 201)
async def create_key(data: KeyCreate) -> Result:
    """Create a key; ``key`` is in this response only. Scopes: read, write, admin (secret
    keys, ``faq_…``) or ``public`` alone (a publishable key, ``faq_pk_…``: reads published
    categories and questions, CORS for its ``allowedOrigins``)."""
    created = await service.create(db(), current_org(), data)
    # This process sees the new key's origins at once (others on the NOTIFY).
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return {"data": created}, 201


@keys.delete("/<fingerprint>")
@requires_scope("admin")
async def revoke_key(fingerprint: str) -> tuple[str, int]:
    """Revoke a key: refused everywhere within a second. An active admin key can be revoked
    only while another admin key with no expiry remains (409 ``last_admin_key``): an
    expiring admin key does not count. Keys are never changed in place (no PATCH)."""
    await service.revoke(db(), current_org(), fingerprint)
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return "", 204
