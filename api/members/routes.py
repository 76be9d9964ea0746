"""``/api/v1/{org}/members`` (admin): the people of the org (issue 30)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_querystring, validate_request

from api.http import conditional_locks as locks
from api.http.binding import current_org, cursors, db, requires_scope, tenancy
from api.http.conditional import conditional
from api.http.pagination import list_body
from api.members import service
from api.members.schemas import MemberCreate, MemberListQuery, MemberOut, MemberUpdate
from api.schemas import Envelope, ListEnvelope
from tenancy.transactions import after_commit

members = Blueprint("members", __name__, url_prefix="/members")
Result = tuple[dict[str, Any], int]


@members.get("")
@requires_scope("admin")
@validate_querystring(MemberListQuery)
@document_response(ListEnvelope[MemberOut])
async def list_members(query_args: MemberListQuery) -> Result:
    """The organization's members, deactivated ones included, oldest first."""
    after = cursors().decode("members", query_args.cursor) if query_args.cursor else None
    items, last = await service.list_members(
        db(), current_org(), limit=query_args.limit, after=str(after[0]) if after else None
    )
    cursor = cursors().encode("members", [last]) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@members.post("")
@requires_scope("admin")
@validate_request(MemberCreate)
@document_response(Envelope[MemberOut], 201)
async def create_member(data: MemberCreate) -> Result:
    """Add a member: ``email`` (unique among active members), ``name``, ``role`` (viewer,
    author, editor or admin). The plan caps active members (402 ``plan_limit_reached``)."""
    return {"data": await service.create_member(db(), current_org(), data)}, 201


@members.get("/<member_id>")
@requires_scope("admin")
@document_response(Envelope[MemberOut])
async def get_member(member_id: str) -> Result:
    """A member (404 ``member_not_found``)."""
    return {"data": await service.get_member(db(), current_org(), member_id)}, 200


@members.patch("/<member_id>")
@requires_scope("admin")
@validate_request(MemberUpdate)
@document_response(Envelope[MemberOut])
@conditional(locks.MEMBER)
async def update_member(member_id: str, data: MemberUpdate) -> Result:
    """Change a member's email, name or role. A lower role lowers the scopes of the member's
    keys at once (never above the role: viewer read; author read+write; editor
    read+write+review; admin all). A deactivated member is 409 ``member_deactivated``; a role
    below admin for the owner of the org's last admin key with no expiry is 409
    ``last_admin_key`` (create another admin key first)."""
    changes = data.model_dump(include=data.model_fields_set)
    result = await service.update_member(db(), current_org(), member_id, changes)
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return {"data": result}, 200


@members.delete("/<member_id>")
@requires_scope("admin")
@conditional(locks.MEMBER)
async def deactivate_member(member_id: str) -> tuple[str, int]:
    """Deactivate a member: its keys are revoked (refused everywhere within a second); the
    member stays, with ``deactivatedAt``, in the audit trail. The owner of the org's last
    admin key with no expiry is 409 ``last_admin_key`` (create another admin key first)."""
    await service.deactivate_member(db(), current_org(), member_id)
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return "", 204
