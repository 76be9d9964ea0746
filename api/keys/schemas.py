"""Request and response models of ``/keys`` (issue 16)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from api.schemas import QueryArgs, RequestBody, ResponseModel, Timestamp

MAX_ORIGINS = 20
Name = Annotated[str, Field(min_length=1, max_length=200)]
# Checked by ``api.keys.service`` (read|write|review|admin|public; public alone).
Scope = Annotated[str, Field(min_length=1, max_length=10)]
Origin = Annotated[str, Field(min_length=1, max_length=255)]


class KeyCreate(RequestBody):
    name: Name
    scopes: list[Scope] = Field(min_length=1, max_length=4)
    expires_at: Timestamp | None = None  # in the future
    # Exact origins (``scheme://host[:port]``, http or https), public keys only.
    allowed_origins: list[Origin] = Field(default_factory=list, max_length=MAX_ORIGINS)
    # The member the key belongs to (issue 30): its scopes never exceed the member's role.
    member_id: Annotated[str, Field(min_length=1, max_length=40)] | None = None


class KeyListQuery(QueryArgs):
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)


class KeyOut(ResponseModel):
    fingerprint: str  # the first 16 hex digits of the key's SHA-256: names it in logs
    name: str
    scopes: list[str]  # read, write, admin (secret keys) or public (a publishable key)
    allowed_origins: list[str]  # CORS origins of a public key
    created_at: str
    last_used_at: str | None  # recorded at most once a minute
    expires_at: str | None
    revoked_at: str | None
    member_id: str | None  # the member it belongs to (its actor in audit logs), or null


class KeyCreated(KeyOut):
    key: str  # shown once: only its hash is stored
