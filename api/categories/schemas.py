"""Request and response models of categories, and the public shape of a category."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from api.schemas import AudienceList, QueryArgs, RequestBody, ResponseModel
from tenancy.clock import iso

SLUG_MAX = 100
Name = Annotated[str, Field(min_length=1, max_length=200)]
Description = Annotated[str, Field(max_length=5000)]
Slug = Annotated[str, Field(min_length=1, max_length=SLUG_MAX)]
Order = Annotated[int, Field(ge=-1_000_000_000, le=1_000_000_000)]
# An id or slug naming a category; one naming none is category_not_found, whatever its length.
CategoryRef = Annotated[str, Field(min_length=1)]


class CategoryCreate(RequestBody):
    name: Name
    slug: Slug | None = None
    description: Description | None = None
    order: Order = 0
    parent_id: CategoryRef | None = None
    audiences: AudienceList = Field(default_factory=list)


class CategoryUpdate(RequestBody):
    name: Name | None = None
    slug: Slug | None = None
    description: Description | None = None
    order: Order | None = None
    parent_id: CategoryRef | None = None
    audiences: AudienceList | None = None


class CategoryListQuery(QueryArgs):
    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)
    q: str | None = Field(default=None, max_length=200)
    # The language to serve (else Accept-Language; api/http/binding.py negotiates it).
    locale: str | None = Field(default=None, min_length=1, max_length=35)
    # The category an import made of this source item (``zendesk:section:1``; issue 29).
    external_id: str | None = Field(default=None, min_length=1, max_length=300)


class CategoryDeleteQuery(QueryArgs):
    force: bool = False


class MergeBody(RequestBody):
    source_id: CategoryRef
    target_id: CategoryRef
    delete_source: bool = False


class CategoryOut(ResponseModel):
    id: str
    slug: str
    locale: str  # the language of name and description as served (read-only)
    name: str
    description: str | None
    order: int
    parent_id: str | None
    is_default: bool
    # The audiences it is kept for (issue 39; empty: everyone), its subcategories and
    # questions with it.
    audiences: list[str]
    question_count: int
    created_at: str
    updated_at: str
    # The source item an import made it of (``zendesk:section:1``), else null (issue 29).
    external_id: str | None


class MergeResult(ResponseModel):
    children_moved: int
    questions_moved: int
    source_deleted: bool


class AuditActor(ResponseModel):
    type: str
    id: str


class AuditEntryOut(ResponseModel):
    id: str
    action: str
    category_id: str | None
    actor: AuditActor
    before: Any
    after: Any
    created_at: str


def category_public(c: Any, question_count: int, external_id: str | None) -> dict[str, Any]:
    """The category exactly as GET returns it (also the ``data`` of its events);
    ``external_id``: its import's source (``api.external_ids.external_id_column``)."""
    return {
        "id": c.id,
        "slug": c.slug,
        "locale": c.locale,
        "name": c.name,
        "description": c.description,
        "order": c.sort_order,
        "parentId": c.parent_id,
        "isDefault": c.is_default,
        "audiences": list(c.audiences or ()),
        "questionCount": question_count,
        "createdAt": iso(c.created_at),
        "updatedAt": iso(c.updated_at),
        "externalId": external_id,
    }
