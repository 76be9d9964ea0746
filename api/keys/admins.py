"""The last-admin rule (issues 16, 26, 40): no command leaves an org without an admin key
that never expires. Revoking a key, lowering its member's role below admin and deactivating
its member all remove admin keys; each asks ``keep_an_admin_key`` first, in its own
transaction, before it changes anything.

An expiring admin key does not count (the org would lose admin access when it lapses), and
an expired or revoked one is no admin key at all. The org's admin keys are locked
(``FOR UPDATE``, in fingerprint order) for the check and held to the commit, so two
concurrent removals of the last two are serialized: the second re-reads the rows the first
changed (a revoked key, or one whose scopes were capped, no longer matches) and is refused.
Only ``shared.api_keys`` is read: members live in the org's schema and are never joined to
it (Citus, schema-based sharding)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import LastAdminKey
from tenancy.clock import utcnow
from tenancy.models import ApiKey

ADVICE = "create another admin key with no expiry first (an expiring admin key does not count)"


async def keep_an_admin_key(
    session: AsyncSession,
    org_id: str,
    *,
    doing: str,
    fingerprint: str | None = None,
    member_id: str | None = None,
) -> None:
    """409 ``last_admin_key`` when removing the admin scope from the key ``fingerprint``, or
    from every key of ``member_id``, would remove a usable admin key and leave none with no
    expiry. ``doing`` names the act in the refusal ("Revoking this key")."""
    rows = (
        await session.execute(
            select(ApiKey.fingerprint, ApiKey.member_id, ApiKey.expires_at)
            .where(
                ApiKey.org_id == org_id,
                ApiKey.scopes.contains(["admin"]),
                ApiKey.revoked.is_(False),
            )
            .order_by(ApiKey.fingerprint)
            .with_for_update()
        )
    ).all()
    now = utcnow()
    going = [
        expires_at
        for key, member, expires_at in rows
        if key == fingerprint or (member_id is not None and member == member_id)
    ]
    staying = [
        expires_at
        for key, member, expires_at in rows
        if key != fingerprint and (member_id is None or member != member_id)
    ]
    if not any(e is None or e > now for e in going):
        return  # no usable admin key goes
    if any(e is None for e in staying):
        return
    raise LastAdminKey(
        f"{doing} would leave the organization with no admin key that never expires: {ADVICE}."
    )
