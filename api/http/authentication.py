"""``authenticate``: the one way a presented key becomes a ``Principal`` (STYLE 11). The API's
routes (``api.http.binding``), the fast path (``api.http.fast_path``) and the MCP server
(``api.mcp.auth``) call it; the help center's visitors are ``visitor``; jobs and the CLI act as
``tenancy.principal.system`` or as the principal that started them (``api.jobs``).

Key and org come from the directory (``tenancy.directory``: cached, dropped on ``NOTIFY``);
a key unknown, revoked, expired or not the one presented is 401 ``unauthorized`` (counted as a
failed authentication of the client's address: 429 past ``FAQ_AUTH_FAILURES_PER_MINUTE``);
a key of another org, or an unknown org, is 404 ``org_not_found``. A member's key acts as its
member on every door, reads and writes alike."""

from __future__ import annotations

import dataclasses
import hmac

from api.audiences.tokens import verify_reader_token
from api.errors import OrgNotFound, RateLimited, Unauthorized
from api.http.rate_limit import RateLimiter
from tenancy.clock import utcnow
from tenancy.directory import Directory, KeyRecord, OrgRecord
from tenancy.keys import hash_key
from tenancy.principal import Principal


def bearer_token(header: str) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header; None for any other header."""
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def key_accepted(key: KeyRecord | None, token: str) -> bool:
    """The key exists, is neither revoked nor expired, and is the one presented (the lookup is
    by hash; comparing again in constant time leaks no timing through an early exit)."""
    if key is None or key.revoked or not hmac.compare_digest(hash_key(token)[:16], key.fingerprint):
        return False
    return not key.expired(utcnow())


def principal_of(key: KeyRecord, org: OrgRecord) -> Principal:
    """The principal of an accepted key of ``org``: its scopes and its member."""
    return Principal(
        org.id,
        org.slug,
        org.plan,
        org.schema_name,
        key.fingerprint,
        key.scopes,
        org.default_locale,
        org.locales,
        member_id=key.member_id,
    )


def visitor(org: OrgRecord) -> Principal:
    """An anonymous reader of the org's help center: published content only."""
    return Principal(
        org.id,
        org.slug,
        org.plan,
        org.schema_name,
        "",
        ("public",),
        org.default_locale,
        org.locales,
    )


def with_reader(principal: Principal, org: OrgRecord, token: str | None) -> Principal:
    """Issue 39: the principal with the reader ``token`` signs in (``X-Reader-Token``), when
    the key is publishable and a token came; 401 ``invalid_reader_token`` when it does not
    verify. A secret key sees everything: its principal is returned as it is. Every door calls
    it after counting the request (a flood of bad tokens spends the caller's budget)."""
    if token is None or not principal.public:
        return principal
    reader = verify_reader_token(token, org.id, org.slug, org.readers)
    return dataclasses.replace(principal, reader=reader)


async def refuse(limiter: RateLimiter | None, address: str, per_minute: int) -> None:
    """401; 429 once the address failed too often this minute."""
    if limiter is not None:
        decision = await limiter.failed_authentication(address, per_minute)
        if decision is not None and not decision.allowed:
            raise RateLimited(
                "Too many failed authentications from this address.",
                headers={"Retry-After": str(decision.reset_seconds)},
            )
    raise Unauthorized()


async def authenticate(
    directory: Directory,
    limiter: RateLimiter | None,
    token: str | None,
    slug: str,
    *,
    address: str,
    failures_per_minute: int,
) -> tuple[Principal, KeyRecord, OrgRecord]:
    """The principal presenting ``token`` to org ``slug`` (with the key and org records the
    door's rate limit and CORS read), or the ``ServiceError`` to answer with. No key at all is
    401 without counting a failure."""
    if token is None:
        raise Unauthorized()
    key = await directory.key(token)
    if not key_accepted(key, token):
        await refuse(limiter, address, failures_per_minute)
    assert key is not None
    org = await directory.org(slug)
    if org is None or org.id != key.org_id:
        raise OrgNotFound()
    return principal_of(key, org), key, org
