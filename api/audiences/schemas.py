"""Request and response models of audiences, and the public shape of an audience."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.categories.schemas import Description, Name, Slug
from api.schemas import QueryArgs, RequestBody, ResponseModel
from tenancy.clock import iso


class AudienceCreate(RequestBody):
    name: Name
    slug: Slug | None = None
    description: Description | None = None


class AudienceUpdate(RequestBody):
    name: Name | None = None
    slug: Slug | None = None
    description: Description | None = None


class AudienceListQuery(QueryArgs):
    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)


class AudienceOut(ResponseModel):
    id: str
    slug: str
    name: str
    description: str | None
    created_at: str
    updated_at: str


def audience_public(a: Any) -> dict[str, Any]:
    """The audience exactly as GET returns it (also its audit snapshots)."""
    return {
        "id": a.id,
        "slug": a.slug,
        "name": a.name,
        "description": a.description,
        "createdAt": iso(a.created_at),
        "updatedAt": iso(a.updated_at),
    }
