"""API keys: generated once, stored as SHA-256 hashes, identified by a fingerprint."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.models import ApiKey

SCOPE_RANK = {"read": 1, "write": 2, "admin": 3}
INVALIDATION_CHANNEL = "faq_tenancy"
# The NOTIFY payload of a key creation (others carry an org id): processes drop cached misses.
NEW_KEY_PAYLOAD = "new-key"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def fingerprint_of(key: str) -> str:
    return hash_key(key)[:16]


def parse_scopes(raw: str) -> list[str]:
    scopes = [s.strip() for s in raw.split(",") if s.strip()]
    unknown = [s for s in scopes if s not in SCOPE_RANK]
    if not scopes or unknown:
        raise ValueError(f"scopes must be a comma list of read, write, admin (got {raw!r})")
    return scopes


def grants(scopes: list[str], required: str) -> bool:
    """admin includes write, write includes read."""
    return max((SCOPE_RANK[s] for s in scopes), default=0) >= SCOPE_RANK[required]


@dataclass(frozen=True)
class IssuedKey:
    key: str
    fingerprint: str
    scopes: list[str]


async def create_key(session: AsyncSession, org_id: str, scopes: list[str]) -> IssuedKey:
    key = "faq_" + secrets.token_urlsafe(32)
    digest = hash_key(key)
    session.add(ApiKey(fingerprint=digest[:16], key_hash=digest, org_id=org_id, scopes=scopes))
    await session.flush()
    # On commit: no process keeps a cached miss for it (tenancy/directory.py).
    await session.execute(
        text("SELECT pg_notify(:channel, :payload)"),
        {"channel": INVALIDATION_CHANNEL, "payload": NEW_KEY_PAYLOAD},
    )
    return IssuedKey(key=key, fingerprint=digest[:16], scopes=scopes)


async def revoke_key(session: AsyncSession, fingerprint: str) -> bool:
    result = await session.execute(
        update(ApiKey)
        .where(ApiKey.fingerprint == fingerprint)
        .values(revoked=True)
        .returning(ApiKey.org_id)
    )
    org_id = result.scalar_one_or_none()
    if org_id is None:
        return False
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
