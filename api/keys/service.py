"""Keys managed by API (issue 16): list, create, revoke. The key itself is returned once, at
creation; only its SHA-256 is stored (``tenancy.keys``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import and_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import KeyNotFound, ValidationFailed, field_error
from api.http.pagination import keyset_page
from api.keys.admins import keep_an_admin_key
from api.keys.schemas import KeyCreate
from api.members.service import active_member, check_key_scopes
from tenancy.audit import Actor, audit_change
from tenancy.clock import iso, utcnow
from tenancy.keys import (
    KEY_RESOURCE,
    audit_revoked,
    check_scopes,
    create_key,
    is_public,
    notify_tenancy_changed,
)
from tenancy.models import ApiKey
from tenancy.principal import Principal

DEFAULT_PORTS = {"http": 80, "https": 443}
COLUMNS = (
    ApiKey.fingerprint,
    ApiKey.name,
    ApiKey.scopes,
    ApiKey.allowed_origins,
    ApiKey.created_at,
    ApiKey.last_used_at,
    ApiKey.expires_at,
    ApiKey.revoked_at,
    ApiKey.member_id,
)


def key_public(row: Any) -> dict[str, Any]:
    return {
        "fingerprint": row.fingerprint,
        "name": row.name,
        "scopes": list(row.scopes),
        "allowedOrigins": list(row.allowed_origins),
        "createdAt": iso(row.created_at),
        "lastUsedAt": iso(row.last_used_at),
        "expiresAt": iso(row.expires_at),
        "revokedAt": iso(row.revoked_at),
        "memberId": row.member_id,
    }


def canonical_origin(value: str) -> str | None:
    """``scheme://host[:port]`` as a browser sends it in ``Origin`` (lower case, no default
    port), or None when ``value`` is not an http(s) origin (a path, a query, user info...)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if (
        scheme not in DEFAULT_PORTS
        or not host
        or parts.path
        or parts.query
        or parts.fragment
        or "?" in value
        or "#" in value
        or parts.username is not None
        or parts.password is not None
    ):
        return None
    if ":" in host:  # IPv6
        host = f"[{host}]"
    if port is None or port == DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def _origins(values: list[str], public: bool) -> list[str]:
    if values and not public:
        raise ValidationFailed(
            "allowedOrigins is only for public keys (secret keys never get CORS headers).",
            details=field_error("allowedOrigins", "only for public keys"),
        )
    kept: list[str] = []
    for value in values:
        origin = canonical_origin(value)
        if origin is None:
            raise ValidationFailed(
                f"{value!r} is not an origin (scheme://host[:port], http or https).",
                details=field_error("allowedOrigins", f"not an origin: {value!r}"),
            )
        if origin not in kept:
            kept.append(origin)
    return kept


def _scopes(values: list[str]) -> list[str]:
    try:
        return check_scopes(values)
    except ValueError as error:
        raise ValidationFailed(
            f"Invalid scopes: {error}.", details=field_error("scopes", str(error))
        ) from None


def _expiry(value: datetime | None) -> datetime | None:
    if value is not None and value <= utcnow():
        raise ValidationFailed(
            "expiresAt must be in the future.", details=field_error("expiresAt", "in the past")
        )
    return value


def validated(
    scopes: list[str], origins: list[str], expires_at: datetime | None
) -> tuple[list[str], list[str], datetime | None]:
    """The scopes, canonical origins and expiry of a new key (also ``faq keys create``);
    400 ``validation_failed`` naming the field."""
    checked = _scopes(scopes)
    return checked, _origins(origins, is_public(checked)), _expiry(expires_at)


async def check_member_key(session: AsyncSession, member_id: str, scopes: list[str]) -> None:
    """A key for ``member_id`` (an active member of the org whose schema ``session`` sees):
    a secret key within the member's role (400 ``validation_failed`` otherwise). The member
    is read ``FOR SHARE`` and stays locked to the commit: a change of its role or its
    deactivation (``FOR UPDATE``) waits for the key, then caps or revokes it; a key made
    after such a change sees the new role."""
    member = await active_member(session, member_id, lock=True)
    if is_public(scopes):
        raise ValidationFailed(
            "A publishable key belongs to no member.",
            details=field_error("memberId", "not for a public key"),
        )
    check_key_scopes(scopes, member.role)


async def list_keys(
    session: AsyncSession, org: Principal, *, limit: int, after: list[Any] | None
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """The org's keys, revoked ones included, oldest first; the sort key of the last item
    when more follow."""
    org.require("admin")
    if after is not None:
        after = [datetime.fromisoformat(after[0]), after[1]]
    stmt = keyset_page(
        select(*COLUMNS).where(ApiKey.org_id == org.id),
        ApiKey.created_at,
        ApiKey.fingerprint,
        after,
    )
    rows = (await session.execute(stmt.limit(limit + 1))).all()
    items = [key_public(r) for r in rows[:limit]]
    if len(rows) <= limit:
        return items, None
    last = rows[limit - 1]
    return items, [last.created_at.isoformat(), last.fingerprint]


async def issue(
    session: AsyncSession,
    org_id: str,
    scopes: list[str],
    *,
    name: str,
    allowed_origins: list[str],
    expires_at: datetime | None,
    actor: Actor,
    member_id: str | None = None,
) -> dict[str, Any]:
    """A new key of the org (checked values: ``validated``), audited in the org's log with
    the public shape of ``GET /keys`` (never the key nor its hash); the public shape plus
    ``key``. ``session`` sees the org's schema (the API's, or ``faq keys create``'s)."""
    issued = await create_key(
        session,
        org_id,
        scopes,
        name=name,
        allowed_origins=allowed_origins,
        expires_at=expires_at,
        member_id=member_id,
    )
    row = (
        await session.execute(select(*COLUMNS).where(ApiKey.fingerprint == issued.fingerprint))
    ).one()
    public = key_public(row)
    await audit_change(
        session,
        org_id,
        resource=KEY_RESOURCE,
        resource_id=issued.fingerprint,
        action="created",
        actor=actor,
        before=None,
        after=public,
    )
    return {**public, "key": issued.key}


async def create(session: AsyncSession, org: Principal, data: KeyCreate) -> dict[str, Any]:
    """A new key of the org (admin); a member's within its role, decided under the member's
    lock (``check_member_key``)."""
    org.require("admin")
    scopes, origins, expires_at = validated(data.scopes, data.allowed_origins, data.expires_at)
    if data.member_id is not None:
        await check_member_key(session, data.member_id, scopes)
    return await issue(
        session,
        org.id,
        scopes,
        name=data.name,
        allowed_origins=origins,
        expires_at=expires_at,
        actor=org.actor,
        member_id=data.member_id,
    )


async def revoke(session: AsyncSession, org: Principal, fingerprint: str) -> None:
    """Revoke one of the org's keys (again: nothing changes). 409 ``last_admin_key`` when it
    is an active admin key and no other admin key with no expiry would be left
    (``api.keys.admins``: the org's admin keys are locked for the check, so two concurrent
    revocations cannot each leave the other's key as the last one). Times come from Python,
    not the database's ``now()`` (``shared.api_keys`` is a Citus reference table)."""
    org.require("admin")
    target = (
        await session.execute(
            select(ApiKey.scopes, ApiKey.revoked).where(
                ApiKey.fingerprint == fingerprint, ApiKey.org_id == org.id
            )
        )
    ).first()
    if target is None:
        raise KeyNotFound()
    if target.revoked:
        return
    if "admin" in target.scopes:
        await keep_an_admin_key(session, org.id, doing="Revoking this key", fingerprint=fingerprint)
    now = utcnow()
    revoked_at = (
        await session.execute(
            update(ApiKey)
            .where(and_(ApiKey.fingerprint == fingerprint, ApiKey.revoked.is_(False)))
            .values(revoked=True, revoked_at=now)
            .returning(ApiKey.revoked_at)
        )
    ).scalar_one_or_none()
    if revoked_at is not None:
        await audit_revoked(session, org.id, fingerprint, revoked_at, org.actor)
    await notify_tenancy_changed(session, org.id)
