"""Who calls ``/mcp/{org}``: the org's key as ``Authorization: Bearer``, checked as the API
checks it (``api.binding``): unknown, revoked or expired keys are 401 (and count as failed
authentications of the client's address), a key of another org or an unknown org 404
``org_not_found``, then the plan's rate limit per key (a publishable key also per address).

A publishable key reads published content only; a secret key what its scopes allow
(``read`` for the read tools, ``write`` for ``create_draft``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from quart import Quart

from api.binding import Tenancy, bearer_token, key_accepted, key_usage
from api.client_addresses import client_behind_proxies
from api.errors import OrgNotFound, RateLimited, Unauthorized
from tenancy.context import OrgContext
from tenancy.directory import OrgRecord
from tenancy.keys import grants, is_public
from tenancy.settings import Settings


@dataclass(frozen=True)
class Caller:
    """An authenticated MCP request: the org, the key's view of it, and where it came from."""

    org: OrgRecord
    context: OrgContext
    public: bool
    address: str
    allowed_origins: tuple[str, ...]
    base_url: str  # scheme://host of the request (links to the help center)
    rate_headers: dict[str, str] = field(default_factory=dict)  # RateLimit-* of this request

    def may(self, scope: str) -> bool:
        """A secret key holding ``scope`` (a publishable key holds none)."""
        return not self.public and grants(self.context.scopes, scope)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def client_address(app: Quart, scope: dict[str, Any]) -> str:
    settings: Settings = app.extensions["settings"]
    peer = scope.get("client")
    forwarded = [
        bytes(v).decode("latin-1") for k, v in scope.get("headers", ()) if k == b"x-forwarded-for"
    ]
    return client_behind_proxies(settings, peer[0] if peer else None, forwarded)


def base_url(scope: dict[str, Any]) -> str:
    host = _header(scope, b"host") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}"


async def authenticate(app: Quart, scope: dict[str, Any], slug: str) -> Caller:
    """The caller of this request, or the ``ServiceError`` to answer with."""
    ext: Tenancy = app.extensions["tenancy"]
    settings: Settings = app.extensions["settings"]
    address = client_address(app, scope)
    token = bearer_token(_header(scope, b"authorization") or "")
    key = await ext.directory.key(token) if token is not None else None
    if token is None or not key_accepted(key, token):
        await _refuse(ext, settings, address, counted=token is not None)
    assert key is not None
    org = await ext.directory.org(slug)
    if org is None or org.id != key.org_id:
        raise OrgNotFound()
    public = is_public(key.scopes)
    limiter = ext.rate_limiter
    rate: dict[str, str] = {}
    if limiter is not None:
        if public:
            decision = await limiter.hit_public(
                key.fingerprint,
                org.plan,
                address,
                settings.faq_public_key_per_address_per_minute,
            )
        else:
            decision = await limiter.hit(key.fingerprint, org.plan)
        if decision is not None and not decision.allowed:
            raise RateLimited(
                f"Rate limit of {decision.limit} requests per window reached.",
                headers={**decision.headers(), "Retry-After": str(decision.reset_seconds)},
            )
        rate = decision.headers() if decision is not None else {}
    key_usage(app.extensions).seen(key.fingerprint)  # the key's lastUsedAt
    context = OrgContext(
        org.id,
        org.slug,
        org.plan,
        org.schema_name,
        key.fingerprint,
        key.scopes,
        org.default_locale,
        org.locales,
    )
    return Caller(org, context, public, address, key.allowed_origins, base_url(scope), rate)


async def _refuse(ext: Tenancy, settings: Settings, address: str, *, counted: bool) -> None:
    """401; 429 once the address failed too often this minute (a key was presented)."""
    if counted and ext.rate_limiter is not None:
        decision = await ext.rate_limiter.failed_authentication(
            address, settings.faq_auth_failures_per_minute
        )
        if decision is not None and not decision.allowed:
            raise RateLimited(
                "Too many failed authentications from this address.",
                headers={"Retry-After": str(decision.reset_seconds)},
            )
    raise Unauthorized()
