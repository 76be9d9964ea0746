"""HTTP routes of categories: validate, call one service function, return the public shape."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import (
    document_querystring,
    document_response,
    validate_querystring,
    validate_request,
)

from api.audiences.visibility import reader_audiences
from api.categories import queries, service
from api.categories.schemas import (
    AuditEntryOut,
    CategoryCreate,
    CategoryDeleteQuery,
    CategoryListQuery,
    CategoryOut,
    CategoryUpdate,
    MergeBody,
    MergeResult,
)
from api.http import conditional_locks as locks
from api.http.binding import (
    chosen_locale,
    current_org,
    cursors,
    db,
    localized,
    public_audience,
    requires_scope,
)
from api.http.conditional import conditional
from api.http.pagination import list_body
from api.questions.schemas import ReadQuery
from api.schemas import Envelope, IdsBody, ListEnvelope, UpdatedCount

categories = Blueprint("categories", __name__, url_prefix="/categories")
Result = tuple[dict[str, Any], int]


@categories.get("")
@requires_scope("read", public=True)
@localized
@validate_querystring(CategoryListQuery)
@document_response(ListEnvelope[CategoryOut])
async def list_categories(query_args: CategoryListQuery) -> Result:
    """List categories, by order then id; with q, best match first. Also readable with a
    publishable key."""
    locale = chosen_locale()
    # A search's cursor is signed for its q and locale (ranks differ per locale).
    kind = "categories" if query_args.q is None else f"categories:q:{query_args.q}:{locale}"
    after = cursors().decode(kind, query_args.cursor) if query_args.cursor else None
    items, last = await queries.list_categories(
        db(),
        limit=query_args.limit,
        after=after,
        q=query_args.q,
        locale=locale,
        published_only=public_audience(),
        external_id=query_args.external_id,
        audiences=reader_audiences(current_org()),
    )
    cursor = cursors().encode(kind, last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@categories.post("")
@requires_scope("write")
@validate_request(CategoryCreate)
@document_response(Envelope[CategoryOut], 201)
async def create_category(data: CategoryCreate) -> Result:
    """Create a category (slug from the name unless given)."""
    return {"data": await service.create_category(db(), current_org(), data)}, 201


@categories.get("/audit")
@requires_scope("admin")
@document_response(Envelope[list[AuditEntryOut]])
async def category_audit() -> Result:
    """The last 100 category mutations, newest first."""
    return {"data": await queries.audit_log(db())}, 200


@categories.post("/merge")
@requires_scope("admin")
@validate_request(MergeBody)
@document_response(Envelope[MergeResult])
async def merge_categories(data: MergeBody) -> Result:
    """Merge the source category into the target."""
    result = await service.merge_categories(
        db(), current_org(), data.source_id, data.target_id, data.delete_source
    )
    return {"data": result}, 200


@categories.post("/reorder")
@requires_scope("write")
@validate_request(IdsBody)
@document_response(Envelope[UpdatedCount])
async def reorder_categories(data: IdsBody) -> Result:
    """Give the listed categories orders 0, 1, 2… (all or nothing)."""
    return {
        "data": {"updated": await service.reorder_categories(db(), current_org(), data.ids)}
    }, 200


@categories.get("/<ref>")
@requires_scope("read", public=True)
@localized
@document_querystring(ReadQuery)
@document_response(Envelope[CategoryOut])
async def get_category(ref: str) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Get a category by id or slug, served in ``?locale=`` (else Accept-Language). Also
    readable with a publishable key."""
    data = await queries.get_category(
        db(),
        ref,
        chosen_locale(),
        published_only=public_audience(),
        audiences=reader_audiences(current_org()),
    )
    return {"data": data}, 200, {"Content-Language": data["locale"]}


@categories.patch("/<ref>")
@requires_scope("write")
@validate_request(CategoryUpdate)
@document_response(Envelope[CategoryOut])
@conditional(locks.CATEGORY)
async def update_category(ref: str, data: CategoryUpdate) -> Result:
    """Update any field accepted by create."""
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    return {"data": await service.update_category(db(), current_org(), ref, changes)}, 200


@categories.delete("/<ref>")
@requires_scope("write")
@validate_querystring(CategoryDeleteQuery)
@conditional(locks.CATEGORY)
async def delete_category(ref: str, query_args: CategoryDeleteQuery) -> tuple[str, int]:
    """Delete a category; with force=true its questions move to the default category."""
    await service.delete_category(db(), current_org(), ref, query_args.force)
    return "", 204
