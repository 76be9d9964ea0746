"""Writes of questions (SPEC "Questions", CONTRACT section 5): ``create_question``,
``update_question`` (PATCH), ``restore_revision``, ``delete_question``, ``reorder_questions``
and ``move_to_category``. Nothing here commits: the request (or the actor) owns the
transaction. Each write records its events in that transaction, and each change to an existing
question's fields also its revision.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Integer, String, column, select, update, values
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import SlugConflict, ValidationErrorCode, field_error
from api.questions.idempotency import Created, claim_key, store_response
from api.questions.models import PublishSchedule, Question
from api.questions.queries import PUBLIC_COLUMNS, count_live, load
from api.questions.revisions import add_revisions, revision_changes
from api.questions.rules import (
    COLUMNS,
    LIVE,
    PUBLISHED,
    SLUGS,
    UNSET,
    category_id,
    check_not_null,
    state_on_create,
    state_on_update,
)
from api.questions.schemas import QuestionCreate, question_public
from api.search import text_vector
from billing.limits import ensure_room
from tenancy.clock import utcnow
from tenancy.context import OrgContext
from tenancy.ids import new_id
from tenancy.outbox import record_event, record_events
from tenancy.schedule import mark_due

# ---- create --------------------------------------------------------------------------------


async def create_question(
    session: AsyncSession,
    org: OrgContext,
    body: QuestionCreate,
    *,
    idempotency_key: str | None = None,
    request_hash: str = "",
) -> Created:
    if body.slug is not None:
        SLUGS.check_manual(body.slug)
    status, scheduled_at = state_on_create(body.status, body.scheduled_publish_at)
    if idempotency_key is not None:
        replay = await claim_key(session, idempotency_key, request_hash)
        if replay is not None:
            return replay
    category = await category_id(session, body.category_id)

    async def count() -> int:
        return await count_live(session)

    await ensure_room(session, org.id, org.plan, "questions", count)
    now = utcnow()
    row = await SLUGS.insert(
        session,
        {
            "id": new_id("q"),
            "slug": body.slug,
            "locale": org.default_locale,
            "title": body.title,
            "answer": body.answer,
            "status": status,
            "category_id": category,
            "sort_order": body.order,
            "published_at": now if status == PUBLISHED else None,
            "scheduled_publish_at": scheduled_at,
            "search_vector": text_vector(org.default_locale, body.title, body.answer),
            "revision_count": 0,
            "created_at": now,
            "updated_at": now,
        },
        manual_slug=body.slug,
        text=body.title,
        returning=PUBLIC_COLUMNS,
    )
    public = question_public(row)
    events = ["question.created"] + (["question.published"] if status == PUBLISHED else [])
    await record_events(session, org.id, [(event, public) for event in events])
    if scheduled_at is not None:
        await mark_due(session, PublishSchedule, org.id, scheduled_at)
    created = Created(201, {"data": public})
    if idempotency_key is not None:
        await store_response(session, idempotency_key, created)
    return created


# ---- PATCH and restore ---------------------------------------------------------------------


async def _emit_changes(
    session: AsyncSession, org_id: str, before: dict[str, Any], after: dict[str, Any]
) -> None:
    events = ["question.updated"]
    if after["status"] == PUBLISHED and before["status"] != PUBLISHED:
        events.append("question.published")
    elif before["status"] == PUBLISHED and after["status"] != PUBLISHED:
        events.append("question.unpublished")
    await record_events(session, org_id, [(event, after) for event in events])


async def _apply(
    session: AsyncSession, org: OrgContext, question: Question, changes: dict[str, Any]
) -> dict[str, Any]:
    """One PATCH on a locked question: new values, one revision, the events of the change."""
    check_not_null(changes)
    before = question_public(question)
    new: dict[str, Any] = {}
    for field in ("title", "answer", "order"):
        if field in changes:
            new[COLUMNS[field]] = changes[field]
    if "slug" in changes and changes["slug"] != question.slug:
        SLUGS.check_manual(changes["slug"])
        new["slug"] = changes["slug"]
    if "categoryId" in changes and changes["categoryId"] != question.category_id:
        new["category_id"] = await category_id(session, changes["categoryId"])
    status, scheduled_at = state_on_update(
        question.status,
        question.scheduled_publish_at,
        changes.get("status"),
        changes.get("scheduledPublishAt", UNSET),
    )
    new["status"] = status
    new["scheduled_publish_at"] = scheduled_at
    now = utcnow()
    if status == PUBLISHED and question.status != PUBLISHED:
        new["published_at"] = now
    elif status != PUBLISHED:
        new["published_at"] = None
    new = {col: value for col, value in new.items() if getattr(question, col) != value}
    changed = [field for field, col in COLUMNS.items() if col in new]
    number = question.revision_count + 1
    values_: dict[str, Any] = {**new, "revision_count": number}
    if new:
        values_["updated_at"] = now
    if "title" in new or "answer" in new:
        values_["search_vector"] = text_vector(
            question.locale, new.get("title", question.title), new.get("answer", question.answer)
        )
    try:
        async with session.begin_nested():
            row = (
                await session.execute(
                    update(Question)
                    .where(Question.id == question.id)
                    .values(**values_)
                    .returning(*Question.__table__.c)
                )
            ).one()
    except IntegrityError as exc:
        if SLUGS.is_conflict(exc):
            raise SlugConflict() from None
        raise
    await add_revisions(session, org.actor, changed, now, [(question.id, number, before)])
    after = question_public(row)
    if new:
        await _emit_changes(session, org.id, before, after)
    if "scheduled_publish_at" in new and scheduled_at is not None:
        await mark_due(session, PublishSchedule, org.id, scheduled_at)
    return after


async def update_question(
    session: AsyncSession, org: OrgContext, ref: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """PATCH: ``changes`` maps the client's field names to the values sent. The row lock
    serializes concurrent PATCHes, so none loses its revision."""
    return await _apply(session, org, await load(session, ref, lock=True), changes)


async def restore_revision(
    session: AsyncSession, org: OrgContext, ref: str, revision_id: str
) -> dict[str, Any]:
    """Apply a revision's snapshot as a new PATCH (which writes its own revision)."""
    question = await load(session, ref, lock=True)
    changes = await revision_changes(session, question.id, revision_id)
    return await _apply(session, org, question, changes)


async def delete_question(session: AsyncSession, org: OrgContext, ref: str) -> None:
    """Soft delete: invisible at once, its slug free; purged after 30 days."""
    question = await load(session, ref, lock=True)
    before = question_public(question)
    await session.execute(
        update(Question).where(Question.id == question.id).values(deleted_at=utcnow())
    )
    await record_event(session, org.id, "question.deleted", before)


# ---- changes to many questions at once -----------------------------------------------------


async def _lock_live(session: AsyncSession, where: ColumnElement[bool]) -> dict[str, Question]:
    """The live questions ``where`` selects, by id, row-locked in id order."""
    stmt = select(Question).where(LIVE, where).order_by(Question.id).with_for_update()
    return {q.id: q for q in (await session.execute(stmt)).scalars()}


async def _update_each(
    session: AsyncSession,
    org: OrgContext,
    befores: dict[str, dict[str, Any]],
    where: ColumnElement[bool],
    field: str,
    **new: Any,
) -> int:
    """One UPDATE of locked questions (``befores``: their public shape before it); each
    updated question gets a revision changing ``field`` and a ``question.updated`` event, in
    id order. Returns how many were updated."""
    now = utcnow()
    rows = (
        await session.execute(
            update(Question)
            .where(where)
            .values(**new, updated_at=now, revision_count=Question.revision_count + 1)
            .returning(*Question.__table__.c)
        )
    ).all()
    rows = sorted(rows, key=lambda r: r.id)
    await add_revisions(
        session, org.actor, [field], now, [(r.id, r.revision_count, befores[r.id]) for r in rows]
    )
    for r in rows:
        await record_event(session, org.id, "question.updated", question_public(r))
    return len(rows)


async def reorder_questions(session: AsyncSession, org: OrgContext, ids: list[str]) -> int:
    """Index i becomes order i, all or nothing. Each question whose order changes gets a
    revision and a ``question.updated`` event."""
    if len(set(ids)) != len(ids):
        raise ValidationErrorCode(
            "The ids list has duplicates.", details=field_error("ids", "duplicate ids")
        )
    current = await _lock_live(session, Question.id.in_(ids))
    unknown = [i for i in ids if i not in current]
    if unknown:
        raise ValidationErrorCode(
            "Some ids are not questions of this organization; nothing was reordered.",
            details=[{"field": "ids", "issue": f"unknown id {i}"} for i in unknown[:20]],
        )
    changed = {i: n for n, i in enumerate(ids) if current[i].sort_order != n}
    if not changed:
        return len(ids)
    new_orders = values(column("id", String), column("position", Integer), name="new_orders").data(
        list(changed.items())
    )
    await _update_each(
        session,
        org,
        {i: question_public(current[i]) for i in changed},
        Question.id == new_orders.c.id,
        "order",
        sort_order=new_orders.c.position,
    )
    return len(ids)


async def move_to_category(
    session: AsyncSession, org: OrgContext, from_category_id: str, to_category_id: str
) -> int:
    """Move every live question of one category to another (category merge and forced delete):
    each moved question is locked, gets a revision and a ``question.updated`` event."""
    current = await _lock_live(session, Question.category_id == from_category_id)
    if not current:
        return 0
    return await _update_each(
        session,
        org,
        {i: question_public(q) for i, q in current.items()},
        Question.id.in_(list(current)),
        "categoryId",
        category_id=to_category_id,
    )
