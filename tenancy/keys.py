"""API keys: generated once, stored as SHA-256 hashes, identified by a fingerprint.

Secret keys (``faq_…``) carry read, write, review or admin (admin includes write and
review, write includes read, review includes read: a reviewer reads what it approves, issue
41). A publishable key (``faq_pk_…``, issue 16) carries ``public`` alone: no other scope
includes it and it includes none of them.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, func, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit import Actor, audit_change
from tenancy.clock import iso, utcnow
from tenancy.models import ApiKey

SCOPE_RANK = {"read": 1, "write": 2, "admin": 3}
PUBLIC = "public"
# Approve or reject drafts (issue 30): beside the ranks, included by admin only; it includes
# read (issue 41: a reviewer reads the drafts, questions and diffs it decides on).
REVIEW = "review"
SCOPES = (*SCOPE_RANK, REVIEW, PUBLIC)
SECRET_PREFIX = "faq_"  # noqa: S105 (a prefix, not a secret)
PUBLIC_PREFIX = "faq_pk_"
INVALIDATION_CHANNEL = "faq_tenancy"
# The NOTIFY payload of a key creation (others carry an org id): processes drop cached misses.
NEW_KEY_PAYLOAD = "new-key"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def fingerprint_of(key: str) -> str:
    return hash_key(key)[:16]


def check_scopes(scopes: Sequence[str]) -> list[str]:
    """The scopes, each once in the order given; ValueError when empty, unknown, or
    ``public`` with another scope."""
    unknown = [s for s in scopes if s not in SCOPES]
    if not scopes or unknown:
        raise ValueError("scopes must be read, write, review, admin or public")
    kept = list(dict.fromkeys(scopes))
    if PUBLIC in kept and len(kept) > 1:
        raise ValueError("public cannot be combined with other scopes")
    return kept


def parse_scopes(raw: str) -> list[str]:
    try:
        return check_scopes([s.strip() for s in raw.split(",") if s.strip()])
    except ValueError as error:
        raise ValueError(f"{error} (got {raw!r})") from None


def grants(scopes: Sequence[str], required: str) -> bool:
    """admin includes write and review, write includes read, review includes read (what a
    reviewer decides on, it must read: the one place that says so, issue 41); public
    includes nothing else, and nothing else includes it."""
    if required == PUBLIC:
        return PUBLIC in scopes
    if required == REVIEW:
        return REVIEW in scopes or "admin" in scopes
    if required == "read" and REVIEW in scopes:
        return True
    rank = max((SCOPE_RANK.get(s, 0) for s in scopes), default=0)
    return rank >= SCOPE_RANK[required]


def is_public(scopes: Sequence[str]) -> bool:
    return PUBLIC in scopes


@dataclass(frozen=True)
class IssuedKey:
    key: str
    fingerprint: str
    scopes: list[str]


async def create_key(
    session: AsyncSession,
    org_id: str,
    scopes: list[str],
    *,
    name: str = "",
    allowed_origins: Sequence[str] = (),
    expires_at: datetime | None = None,
    member_id: str | None = None,
) -> IssuedKey:
    """A new key (``faq_pk_`` for a public one); the caller's transaction commits it."""
    scopes = check_scopes(scopes)
    prefix = PUBLIC_PREFIX if is_public(scopes) else SECRET_PREFIX
    key = prefix + secrets.token_urlsafe(32)
    digest = hash_key(key)
    session.add(
        ApiKey(
            fingerprint=digest[:16],
            key_hash=digest,
            org_id=org_id,
            scopes=scopes,
            name=name,
            allowed_origins=list(allowed_origins),
            expires_at=expires_at,
            member_id=member_id,
        )
    )
    await session.flush()
    # On commit: no process keeps a cached miss for it, nor stale public origins
    # (tenancy/directory.py).
    await session.execute(
        text("SELECT pg_notify(:channel, :payload)"),
        {"channel": INVALIDATION_CHANNEL, "payload": NEW_KEY_PAYLOAD},
    )
    return IssuedKey(key=key, fingerprint=digest[:16], scopes=scopes)


def active_key() -> ColumnElement[bool]:
    """Not revoked and not expired (now: the transaction's time)."""
    return and_(
        ApiKey.revoked.is_(False),
        or_(ApiKey.expires_at.is_(None), ApiKey.expires_at > func.now()),
    )


async def public_origins(session: AsyncSession, org_id: str) -> list[tuple[str, datetime | None]]:
    """The origins listed by the org's public keys not revoked, each with its key's expiry
    (the caller checks it at the time of use: a cached answer stays right as keys expire)."""
    origin = func.unnest(ApiKey.allowed_origins).label("origin")
    rows = await session.execute(
        select(origin, ApiKey.expires_at).where(
            ApiKey.org_id == org_id, ApiKey.scopes.contains([PUBLIC]), ApiKey.revoked.is_(False)
        )
    )
    return [(row.origin, row.expires_at) for row in rows]


async def touch_key(session: AsyncSession, fingerprint: str) -> None:
    """Record a use of the key (``last_used_at``), at most once a minute in the database."""
    await session.execute(
        update(ApiKey)
        .where(
            ApiKey.fingerprint == fingerprint,
            or_(
                ApiKey.last_used_at.is_(None),
                ApiKey.last_used_at < func.now() - text("interval '1 minute'"),
            ),
        )
        .values(last_used_at=func.now())
    )


KEY_RESOURCE = "key"  # in the org's audit log (resourceId: the fingerprint)


async def audit_revoked(
    session: AsyncSession, org_id: str, fingerprint: str, revoked_at: datetime, actor: Actor
) -> None:
    """The org's audit entry of a revocation (changed fields only; never the key or hash).
    ``session`` must see the org's schema."""
    await audit_change(
        session,
        org_id,
        resource=KEY_RESOURCE,
        resource_id=fingerprint,
        action="revoked",
        actor=actor,
        before={"revokedAt": None},
        after={"revokedAt": iso(revoked_at)},
    )


async def revoke_key(
    session: AsyncSession, fingerprint: str, *, actor: Actor | None = None
) -> bool:
    """Revoke the key (again: nothing changes); False when there is no such key. With
    ``actor``, a revocation is audited in the key's org (``session`` must then be bound to
    that org's schema: ``faq keys revoke``)."""
    # The time is computed here, not ``now()`` in SQL: on Citus ``api_keys`` is a reference
    # table, and an UPDATE of one refuses a non-IMMUTABLE function in a COALESCE (issue 27).
    revoked_at = utcnow()
    result = await session.execute(
        update(ApiKey)
        .where(ApiKey.fingerprint == fingerprint, ApiKey.revoked_at.is_(None))
        .values(revoked=True, revoked_at=revoked_at)
        .returning(ApiKey.org_id)
    )
    org_id = result.scalar_one_or_none()
    if org_id is None:  # no such key, or revoked before: nothing changes
        return (
            await session.scalar(select(ApiKey.org_id).where(ApiKey.fingerprint == fingerprint))
            is not None
        )
    if actor is not None:
        await audit_revoked(session, org_id, fingerprint, revoked_at, actor)
    await notify_tenancy_changed(session, org_id)
    return True


async def find_key(session: AsyncSession, key: str) -> ApiKey | None:
    return (
        await session.execute(select(ApiKey).where(ApiKey.key_hash == hash_key(key)))
    ).scalar_one_or_none()


async def notify_tenancy_changed(session: AsyncSession, org_id: str) -> None:
    """Tell every API process (on commit) to drop cached orgs and keys."""
    await session.execute(
        text("SELECT pg_notify(:channel, :org_id)"),
        {"channel": INVALIDATION_CHANNEL, "org_id": org_id},
    )
