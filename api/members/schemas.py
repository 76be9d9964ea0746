"""Request and response models of ``/members`` (issue 30)."""

from __future__ import annotations

from typing import Annotated

from pydantic import EmailStr, Field

from api.members.roles import Role
from api.schemas import QueryArgs, RequestBody, ResponseModel

Name = Annotated[str, Field(min_length=1, max_length=200)]
Email = Annotated[EmailStr, Field(max_length=254)]


class MemberCreate(RequestBody):
    email: Email
    name: Name
    role: Role


class MemberUpdate(RequestBody):
    email: Email | None = None
    name: Name | None = None
    role: Role | None = None


class MemberListQuery(QueryArgs):
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)


class MemberOut(ResponseModel):
    id: str  # mem_ + ULID
    email: str  # unique among the org's active members (case-insensitive)
    name: str
    role: Role  # viewer, author, editor or admin: caps the scopes of the member's keys
    created_at: str
    updated_at: str
    deactivated_at: str | None  # DELETE deactivates: the member stays in the audit trail
