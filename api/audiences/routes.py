"""HTTP routes of audiences (issue 39): validate, call one command, return the public shape.
Every route needs an admin key."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_querystring, validate_request

from api.audiences import service
from api.audiences.schemas import AudienceCreate, AudienceListQuery, AudienceOut, AudienceUpdate
from api.http import conditional_locks as locks
from api.http.binding import current_org, cursors, db, requires_scope
from api.http.conditional import conditional
from api.http.pagination import list_body
from api.schemas import Envelope, ListEnvelope

audiences = Blueprint("audiences", __name__, url_prefix="/audiences")
Result = tuple[dict[str, Any], int]


@audiences.post("")
@requires_scope("admin")
@validate_request(AudienceCreate)
@document_response(Envelope[AudienceOut], 201)
async def create_audience(data: AudienceCreate) -> Result:
    """Create an audience (slug from the name unless given); capped by plan."""
    return {"data": await service.create_audience(db(), current_org(), data)}, 201


@audiences.get("")
@requires_scope("admin")
@validate_querystring(AudienceListQuery)
@document_response(ListEnvelope[AudienceOut])
async def list_audiences(query_args: AudienceListQuery) -> Result:
    """List audiences, oldest first."""
    after = cursors().decode("audiences", query_args.cursor) if query_args.cursor else None
    items, last = await service.list_audiences(
        db(), current_org(), limit=query_args.limit, after=after
    )
    cursor = cursors().encode("audiences", last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@audiences.get("/<ref>")
@requires_scope("admin")
@document_response(Envelope[AudienceOut])
async def get_audience(ref: str) -> Result:
    """Get an audience by id or slug."""
    return {"data": await service.get_audience(db(), current_org(), ref)}, 200


@audiences.patch("/<ref>")
@requires_scope("admin")
@validate_request(AudienceUpdate)
@document_response(Envelope[AudienceOut])
@conditional(locks.AUDIENCE)
async def update_audience(ref: str, data: AudienceUpdate) -> Result:
    """Update any of name, slug, description."""
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    return {"data": await service.update_audience(db(), current_org(), ref, changes)}, 200


@audiences.delete("/<ref>")
@requires_scope("admin")
@conditional(locks.AUDIENCE)
async def delete_audience(ref: str) -> tuple[str, int]:
    """Delete an audience; its slug is free again at once."""
    await service.delete_audience(db(), current_org(), ref)
    return "", 204
