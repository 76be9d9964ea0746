"""Audience commands (issue 39): named groups of readers an org keeps content for. Admin
only, capped by plan (``billing.plans``, 402 past the cap), slugs as category slugs (auto from
the name, ``-2`` when taken, 409 for a taken manual one), each change in the org's audit log
in the caller's transaction. Nothing here commits."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, exists, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.models import Audience
from api.audiences.schemas import AudienceCreate, audience_public
from api.categories.models import Category
from api.categories.schemas import SLUG_MAX
from api.errors import (
    AudienceInUse,
    AudienceNotFound,
    SlugConflict,
    ValidationFailed,
    field_error,
)
from api.questions.models import Question
from api.reviews.models import QuestionDraft
from api.slugs import SlugRule
from billing.limits import ensure_room
from tenancy.audit import audit_change
from tenancy.clock import utcnow
from tenancy.ids import looks_like_id, new_id
from tenancy.principal import Principal

LIVE = Audience.deleted_at.is_(None)
SLUGS = SlugRule(Audience, LIVE, SLUG_MAX, frozenset(), "uq_audiences_slug_live")
AUDITED = "audience"
EDITABLE = {"name": "name", "slug": "slug", "description": "description"}


def _by_ref(ref: str) -> ColumnElement[bool]:
    return Audience.id == ref if looks_like_id(ref, "aud") else Audience.slug == ref


async def _load(session: AsyncSession, ref: str, *, lock: bool = False) -> Audience:
    stmt = select(Audience).where(LIVE, _by_ref(ref))
    if lock:
        stmt = stmt.with_for_update()
    audience = (await session.execute(stmt)).scalar_one_or_none()
    if audience is None:
        raise AudienceNotFound()
    return audience


async def _count_live(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.count()).select_from(Audience).where(LIVE)) or 0)


async def _audit(
    session: AsyncSession, org: Principal, action: str, audience_id: str, before: Any, after: Any
) -> None:
    await audit_change(
        session,
        org.id,
        resource=AUDITED,
        resource_id=audience_id,
        action=action,
        actor=org.actor,
        before=before,
        after=after,
    )


async def create_audience(
    session: AsyncSession, org: Principal, body: AudienceCreate
) -> dict[str, Any]:
    org.require("admin")
    if body.slug is not None:
        SLUGS.check_manual(body.slug)
    await ensure_room(session, org.id, org.plan, "audiences", lambda: _count_live(session))
    now = utcnow()
    audience_id = new_id("aud")
    await SLUGS.insert(
        session,
        {
            "id": audience_id,
            "slug": body.slug,
            "name": body.name,
            "description": body.description,
            "created_at": now,
            "updated_at": now,
        },
        manual_slug=body.slug,
        text=body.name,
    )
    public = audience_public(await _load(session, audience_id))
    await _audit(session, org, "created", audience_id, None, public)
    return public


async def list_audiences(
    session: AsyncSession, org: Principal, *, limit: int, after: list[Any] | None
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """Oldest first (ids are ULIDs)."""
    org.require("admin")
    stmt = select(Audience).where(LIVE)
    if after is not None:
        stmt = stmt.where(Audience.id > str(after[0]))
    rows = list((await session.execute(stmt.order_by(Audience.id).limit(limit + 1))).scalars())
    page = rows[:limit]
    return [audience_public(a) for a in page], ([page[-1].id] if len(rows) > limit else None)


async def get_audience(session: AsyncSession, org: Principal, ref: str) -> dict[str, Any]:
    org.require("admin")
    return audience_public(await _load(session, ref))


async def update_audience(
    session: AsyncSession, org: Principal, ref: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """PATCH: ``changes`` maps the client's field names to the values sent. A PATCH that
    changes nothing writes nothing; the audit entry holds the changed fields only."""
    org.require("admin")
    for field in ("name", "slug"):
        if field in changes and changes[field] is None:
            raise ValidationFailed(details=field_error(field, "must not be null"))
    audience = await _load(session, ref, lock=True)
    before = audience_public(audience)
    values = {
        EDITABLE[field]: value
        for field, value in changes.items()
        if getattr(audience, EDITABLE[field]) != value
    }
    if "slug" in values:
        SLUGS.check_manual(values["slug"])
        if await _in_use(session, audience.slug):
            raise AudienceInUse("Content is kept for this audience: its slug cannot change.")
    if not values:
        return before
    values["updated_at"] = utcnow()
    try:
        async with session.begin_nested():
            await session.execute(
                update(Audience).where(Audience.id == audience.id).values(**values)
            )
    except IntegrityError as exc:
        if SLUGS.is_conflict(exc):
            raise SlugConflict() from None
        raise
    await session.refresh(audience)
    after = audience_public(audience)
    changed = [f for f in EDITABLE if before[f] != after[f]]
    await _audit(
        session,
        org,
        "updated",
        audience.id,
        {f: before[f] for f in changed},
        {f: after[f] for f in changed},
    )
    return after


async def delete_audience(session: AsyncSession, org: Principal, ref: str) -> None:
    """Soft delete: the audience disappears and its slug is free again at once."""
    org.require("admin")
    audience = await _load(session, ref, lock=True)
    if await _in_use(session, audience.slug):
        raise AudienceInUse()
    await _audit(session, org, "deleted", audience.id, audience_public(audience), None)
    now = utcnow()
    await session.execute(
        update(Audience).where(Audience.id == audience.id).values(deleted_at=now, updated_at=now)
    )


async def checked_audiences(session: AsyncSession, slugs: list[str], field: str) -> list[str]:
    """``slugs`` as a category or question keeps them (each once, in the order sent), when
    each names a live audience of the org; else 400 ``validation_failed`` naming the first
    that does not."""
    wanted = list(dict.fromkeys(slugs))
    if not wanted:
        return []
    # FOR KEY SHARE: a delete of one of them (FOR UPDATE, then its in-use check) waits for
    # this write's commit and sees it, or this waits for the delete and no longer finds it.
    stmt = (
        select(Audience.slug)
        .where(LIVE, Audience.slug.in_(wanted))
        .with_for_update(read=True, key_share=True)
    )
    live = set((await session.execute(stmt)).scalars().all())
    for n, slug in enumerate(wanted):
        if slug not in live:
            raise ValidationFailed(
                f"No audience {slug!r} in this organization.",
                details=field_error(f"{field}[{n}]", "not an audience of this organization"),
            )
    return wanted


async def _in_use(session: AsyncSession, slug: str) -> bool:
    """Whether a live category or question is kept for the audience ``slug``, or a draft of
    a live question would keep it so."""
    named = [slug]
    used = select(Category.id).where(
        Category.deleted_at.is_(None), Category.audiences.contains(named)
    )
    used_q = select(Question.id).where(
        Question.deleted_at.is_(None), Question.audiences.contains(named)
    )
    # A draft's too: publishing it must find the audience, by the same slug.
    used_d = (
        select(QuestionDraft.question_id)
        .join(Question, Question.id == QuestionDraft.question_id)
        .where(Question.deleted_at.is_(None), QuestionDraft.changes.contains({"audiences": named}))
    )
    found = await session.execute(select(exists(used) | exists(used_q) | exists(used_d)))
    return bool(found.scalar())
