"""Request and response models of audiences, and the public shape of an audience."""

from __future__ import annotations

from typing import Annotated, Any, Literal

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


# ---- /settings/readers: how reader tokens are verified ---------------------------------------

Kid = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$")]


class ReaderKeyIn(RequestBody):
    """One verification key: HS256 (the service makes the secret), or RS256/ES256 with the
    public key as PEM (``publicKey``) or as a JWK (``jwk``)."""

    kid: Kid
    alg: Literal["HS256", "RS256", "ES256"]
    public_key: Annotated[str, Field(max_length=10_000)] | None = None
    jwk: dict[str, Any] | None = None


Text = Annotated[str, Field(min_length=1, max_length=500)]


class OpenIdConnectIn(RequestBody):
    """Sign-in to the hosted help center with the org's OpenID Connect provider
    (``api.helpcenter.oidc``). ``clientSecret`` is write-only: left out while ``issuer`` and
    ``clientId`` stay the same, the stored one is kept."""

    issuer: Annotated[str, Field(min_length=9, max_length=500)]
    client_id: Text
    client_secret: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    # The ID token's claim holding audience slugs (a list, or one space-separated string).
    audiences_claim: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    scopes: Annotated[str, Field(min_length=6, max_length=500)] = "openid email profile"
    display_name: Annotated[str, Field(min_length=1, max_length=100)] | None = None


class ReadersUpdate(RequestBody):
    """The whole setting (``PUT``): what it leaves out is gone."""

    issuer: Annotated[str, Field(min_length=1, max_length=500)] | None = None
    max_lifetime_seconds: int = Field(default=3600, ge=60, le=7 * 86_400)
    keys: list[ReaderKeyIn] = Field(default_factory=list, max_length=10)
    # A JWKS document ({"keys": [...]}, each JWK with its kid and alg) added to ``keys``.
    jwks: dict[str, Any] | None = None
    open_id_connect: OpenIdConnectIn | None = None


class ReaderKeyOut(ResponseModel):
    kid: str
    alg: str
    jwk: dict[str, Any] | None  # RS256/ES256: the public key; HS256: null
    created_at: str
    # Only in the response of the PUT that made an HS256 key: its secret, shown once.
    secret: str | None = None


class OpenIdConnectOut(ResponseModel):
    issuer: str
    client_id: str
    client_secret_set: bool  # the secret itself is never shown
    audiences_claim: str | None
    scopes: str
    display_name: str | None


class ReadersOut(ResponseModel):
    issuer: str | None
    max_lifetime_seconds: int
    keys: list[ReaderKeyOut]
    open_id_connect: OpenIdConnectOut | None = None
