"""Who calls ``/mcp/{org}``: the org's key as ``Authorization: Bearer``, checked as the API
checks it (``api.http.authentication``: the same ``authenticate``): unknown, revoked or
expired keys are 401 (and count as failed authentications of the client's address), a key
of another org or an unknown org 404 ``org_not_found``, then the plan's rate limit per key (a
publishable key also per address).

A publishable key reads published content only; a secret key what its scopes allow
(``read`` for the read tools, which ``write``, ``review`` and ``admin`` include; ``write``
for ``create_draft``): the principal decides (``Principal.may``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from quart import Quart

from api.audiences.tokens import READER_TOKEN_HEADER
from api.errors import RateLimited
from api.http.authentication import authenticate as one_door
from api.http.authentication import bearer_token, with_reader
from api.http.binding import Tenancy, key_usage
from api.http.client_addresses import client_behind_proxies
from tenancy.directory import OrgRecord
from tenancy.principal import Principal
from tenancy.settings import Settings


@dataclass(frozen=True)
class Caller:
    """An authenticated MCP request: the org, the key's view of it, and where it came from."""

    org: OrgRecord
    principal: Principal
    public: bool
    address: str
    allowed_origins: tuple[str, ...]
    base_url: str  # scheme://host of the request (links to the help center)
    rate_headers: dict[str, str] = field(default_factory=dict)  # RateLimit-* of this request

    def may(self, scope: str) -> bool:
        """A secret key holding ``scope`` (a publishable key holds none)."""
        return not self.public and self.principal.may(scope)

    @property
    def reads(self) -> bool:
        """May call the read tools: a publishable key (published content only) or a secret
        key the principal grants ``read``."""
        return self.public or self.principal.may("read")


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
    principal, key, org = await one_door(
        ext.directory,
        ext.rate_limiter,
        bearer_token(_header(scope, b"authorization") or ""),
        slug,
        address=address,
        failures_per_minute=settings.faq_auth_failures_per_minute,
    )
    limiter = ext.rate_limiter
    rate: dict[str, str] = {}
    if limiter is not None:
        if principal.public:
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
    # Issue 39: a reader token beside a publishable key, as on every door.
    token = _header(scope, READER_TOKEN_HEADER.lower().encode())
    principal = with_reader(principal, org, token)
    key_usage(app.extensions).seen(key.fingerprint)  # the key's lastUsedAt
    return Caller(
        org, principal, principal.public, address, key.allowed_origins, base_url(scope), rate
    )
