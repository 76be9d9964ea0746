"""Members of the org (issue 30): list, read, create (within the plan's seats), change, and
deactivate. A member's role caps the scopes of its keys: lowering the role lowers them;
deactivation revokes them (refused everywhere within a second, as a revocation is).
Nothing here commits."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationFailed, field_error
from api.keys.admins import keep_an_admin_key
from api.members.errors import MemberDeactivated, MemberEmailTaken, MemberNotFound
from api.members.models import Member
from api.members.roles import ALLOWED, capped, exceeding
from api.members.schemas import MemberCreate
from billing.errors import PlanLimitReached
from billing.plans import Plan, seats_of
from tenancy.audit import audit_change
from tenancy.clock import iso, utcnow
from tenancy.ids import looks_like_id, new_id
from tenancy.keys import audit_revoked, notify_tenancy_changed
from tenancy.models import ApiKey
from tenancy.principal import Principal

MEMBER_RESOURCE = "member"
UNIQUE_EMAIL = "uq_members_email_active"


def member_public(m: Member | Any) -> dict[str, Any]:
    return {
        "id": m.id,
        "email": m.email,
        "name": m.name,
        "role": m.role,
        "createdAt": iso(m.created_at),
        "updatedAt": iso(m.updated_at),
        "deactivatedAt": iso(m.deactivated_at),
    }


async def list_members(
    session: AsyncSession, org: Principal, *, limit: int, after: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """Members, deactivated ones included, oldest first (ids are ULIDs); the last id when more
    follow."""
    org.require("admin")
    stmt = select(Member).order_by(Member.id).limit(limit + 1)
    if after is not None:
        stmt = stmt.where(Member.id > after)
    rows = list((await session.execute(stmt)).scalars())
    items = [member_public(m) for m in rows[:limit]]
    return items, rows[limit - 1].id if len(rows) > limit else None


async def _load(
    session: AsyncSession, member_id: str, *, lock: Literal["update", "share"] | None = None
) -> Member:
    """The member, read as it is now (not as this session saw it before), locked ``FOR
    UPDATE`` (a change) or ``FOR SHARE`` (a decision that rests on its role) when asked."""
    if not looks_like_id(member_id, "mem"):
        raise MemberNotFound()
    stmt = select(Member).where(Member.id == member_id).execution_options(populate_existing=True)
    if lock is not None:
        stmt = stmt.with_for_update(read=lock == "share")
    member = (await session.execute(stmt)).scalar_one_or_none()
    if member is None:
        raise MemberNotFound()
    return member


async def get_member(session: AsyncSession, org: Principal, member_id: str) -> dict[str, Any]:
    org.require("admin")
    return member_public(await _load(session, member_id))


async def first_admin(session: AsyncSession) -> dict[str, Any] | None:
    """The org's first admin member: the oldest active one (ids are ULIDs), or None. The
    service acts on the org's own behalf here (``faq orgs ensure``): no principal."""
    stmt = (
        select(Member)
        .where(Member.role == "admin", Member.deactivated_at.is_(None))
        .order_by(Member.id)
        .limit(1)
    )
    member = (await session.execute(stmt)).scalar_one_or_none()
    return member_public(member) if member is not None else None


async def active_member(session: AsyncSession, member_id: str, *, lock: bool = False) -> Member:
    """The active member a new key is for; 400 ``validation_failed`` (``memberId``) when the
    org has no such active member (another org's ids included). With ``lock``, read ``FOR
    SHARE``: its role and state hold until the caller's transaction ends (a role change or
    a deactivation waits for it, ``FOR UPDATE``)."""
    try:
        member = await _load(session, member_id, lock="share" if lock else None)
    except MemberNotFound:
        member = None
    if member is None or member.deactivated_at is not None:
        raise ValidationFailed(
            "memberId names no active member of this organization.",
            details=field_error("memberId", "no such active member"),
        )
    return member


def check_key_scopes(scopes: list[str], role: str) -> None:
    """A member's key holds no scope its role does not allow (400 ``validation_failed``)."""
    over = exceeding(scopes, role)
    if over:
        raise ValidationFailed(
            f"The member's role ({role}) does not allow {', '.join(over)}.",
            details=field_error("scopes", f"exceeds the member's role {role}"),
        )


async def _write(session: AsyncSession, stmt: Any) -> Any:
    """Run an insert/update of members; an active member with that email is a 409."""
    try:
        async with session.begin_nested():
            return (await session.execute(stmt)).one()
    except IntegrityError as exc:
        if UNIQUE_EMAIL in str(exc.orig):
            raise MemberEmailTaken() from None
        raise


async def _ensure_seat(session: AsyncSession, org: Principal) -> None:
    """Refuse a member past the plan's seats (402), checked after the insert under the org's
    advisory lock of this cap, so concurrent creates never pass it (``billing.limits``)."""
    cap = seats_of(Plan(org.plan))
    if cap is None:
        return
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"cap:{org.id}:seats"},
    )
    active = await session.scalar(
        select(func.count()).select_from(Member).where(Member.deactivated_at.is_(None))
    )
    if (active or 0) > cap:
        raise PlanLimitReached(
            f"The {org.plan} plan allows {cap} active members; upgrade to add more.",
        )


async def create_member(
    session: AsyncSession, org: Principal, data: MemberCreate
) -> dict[str, Any]:
    org.require("admin")
    now = utcnow()
    row = await _write(
        session,
        insert(Member)
        .values(
            id=new_id("mem"),
            email=str(data.email),
            name=data.name,
            role=data.role,
            created_at=now,
            updated_at=now,
        )
        .returning(*Member.__table__.c),
    )
    public = member_public(row)
    await audit_change(
        session,
        org.id,
        resource=MEMBER_RESOURCE,
        resource_id=row.id,
        action="created",
        actor=org.actor,
        before=None,
        after=public,
    )
    await _ensure_seat(session, org)  # last: the cap's lock is held for the count and COMMIT
    return public


async def _cap_keys(session: AsyncSession, org: Principal, member_id: str, role: str) -> bool:
    """Lower the scopes of the member's live keys to what ``role`` allows; True when one
    changed (the caller announces it: every process drops its cached keys)."""
    keys = (
        await session.execute(
            select(ApiKey.fingerprint, ApiKey.scopes)
            .where(
                ApiKey.org_id == org.id, ApiKey.member_id == member_id, ApiKey.revoked.is_(False)
            )
            .order_by(ApiKey.fingerprint)
            .with_for_update()
        )
    ).all()
    changed = False
    for key in keys:
        if not exceeding(key.scopes, role):
            continue
        new = capped(key.scopes, role)
        await session.execute(
            update(ApiKey).where(ApiKey.fingerprint == key.fingerprint).values(scopes=new)
        )
        await audit_change(
            session,
            org.id,
            resource="key",
            resource_id=key.fingerprint,
            action="updated",
            actor=org.actor,
            before={"scopes": list(key.scopes)},
            after={"scopes": new},
        )
        changed = True
    return changed


async def update_member(
    session: AsyncSession, org: Principal, member_id: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """PATCH ``email``, ``name``, ``role``. A lower role lowers the scopes of the member's
    keys at once, in this transaction, under the member's lock (a key being made for the
    member meanwhile is waited for, then capped). A role below admin is 409
    ``last_admin_key`` when the member's keys hold the org's last admin key with no
    expiry."""
    org.require("admin")
    for field in ("email", "name", "role"):
        if field in changes and changes[field] is None:
            raise ValidationFailed(details=field_error(field, "must not be null"))
    member = await _load(session, member_id, lock="update")
    if member.deactivated_at is not None:
        raise MemberDeactivated()
    before = member_public(member)
    new = {k: (str(v) if k == "email" else v) for k, v in changes.items()}
    new = {k: v for k, v in new.items() if getattr(member, k) != v}
    if not new:
        return before
    if "role" in new and "admin" not in ALLOWED[new["role"]]:
        await keep_an_admin_key(
            session, org.id, doing="Lowering this member's role", member_id=member.id
        )
    row = await _write(
        session,
        update(Member)
        .where(Member.id == member.id)
        .values(**new, updated_at=utcnow())
        .returning(*Member.__table__.c),
    )
    after = member_public(row)
    await audit_change(
        session,
        org.id,
        resource=MEMBER_RESOURCE,
        resource_id=member.id,
        action="updated",
        actor=org.actor,
        before={k: before[k] for k in new},
        after={k: after[k] for k in new},
    )
    if "role" in new and await _cap_keys(session, org, member.id, new["role"]):
        await notify_tenancy_changed(session, org.id)
    return after


async def deactivate_member(session: AsyncSession, org: Principal, member_id: str) -> bool:
    """Deactivate the member (again: nothing changes) and revoke its keys; True when keys
    were revoked (the caller drops this process's cached keys after the commit). 409
    ``last_admin_key`` when its keys hold the org's last admin key with no expiry."""
    org.require("admin")
    member = await _load(session, member_id, lock="update")
    if member.deactivated_at is not None:
        return False
    await keep_an_admin_key(session, org.id, doing="Deactivating this member", member_id=member.id)
    now = utcnow()
    await session.execute(
        update(Member).where(Member.id == member.id).values(deactivated_at=now, updated_at=now)
    )
    await audit_change(
        session,
        org.id,
        resource=MEMBER_RESOURCE,
        resource_id=member.id,
        action="deactivated",
        actor=org.actor,
        before={"deactivatedAt": None},
        after={"deactivatedAt": iso(now)},
    )
    # Times from Python: ``api_keys`` is a Citus reference table (no now() in its UPDATE).
    revoked = (
        await session.execute(
            update(ApiKey)
            .where(
                ApiKey.org_id == org.id, ApiKey.member_id == member.id, ApiKey.revoked.is_(False)
            )
            .values(revoked=True, revoked_at=now)
            .returning(ApiKey.fingerprint)
        )
    ).scalars()
    fingerprints = sorted(revoked)
    for fingerprint in fingerprints:
        await audit_revoked(session, org.id, fingerprint, now, org.actor)
    await notify_tenancy_changed(session, org.id)
    return bool(fingerprints)
