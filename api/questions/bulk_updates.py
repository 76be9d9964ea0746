"""Changes to many questions at once (issue 40 split them from the single-question commands):
the order of a list of questions (``POST /questions/reorder``) and moving every question of a
category to another (category merge and forced delete). Each is one UPDATE of the locked rows,
with a revision, a ``question.updated`` event per question and the change's audit entries.
Unlike a PATCH, they leave the approval of the questions' drafts as it is (order and
category are the org's arrangement, decided by whoever arranges it: docs/decisions.md)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Integer, String, column, select, update, values
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationErrorCode, field_error
from api.questions import read_drafts
from api.questions.models import RETURNED, Question
from api.questions.revisions import add_revisions, question_audit
from api.questions.rules import LIVE
from api.questions.schemas import question_public
from tenancy.clock import utcnow
from tenancy.outbox import record_events
from tenancy.principal import Principal


async def _lock_live(session: AsyncSession, where: ColumnElement[bool]) -> dict[str, Question]:
    """The live questions ``where`` selects, by id, row-locked in id order."""
    stmt = select(Question).where(LIVE, where).order_by(Question.id).with_for_update()
    return {q.id: q for q in (await session.execute(stmt)).scalars()}


async def _update_each(
    session: AsyncSession,
    org: Principal,
    befores: dict[str, dict[str, Any]],
    where: ColumnElement[bool],
    field: str,
    audits: list[tuple[str, dict[str, Any]]],
    **new: Any,
) -> int:
    """One UPDATE of locked questions (``befores``: their public shape before it); each
    updated question gets a revision changing ``field`` and a ``question.updated`` event, in
    id order, recorded with the change's ``audits`` (its audit events) in one statement.
    Returns how many were updated."""
    now = utcnow()
    rows = (
        await session.execute(
            update(Question)
            .where(where)
            .values(**new, updated_at=now, revision_count=Question.revision_count + 1)
            .returning(*RETURNED, *read_drafts.draft_returning())
        )
    ).all()
    rows = sorted(rows, key=lambda r: r.id)
    await add_revisions(
        session, org.actor, [field], now, [(r.id, r.revision_count, befores[r.id]) for r in rows]
    )
    events = [("question.updated", read_drafts.question_read(r, True)) for r in rows]
    await record_events(session, org.id, events + audits)
    return len(rows)


async def reorder_questions(session: AsyncSession, org: Principal, ids: list[str]) -> int:
    """Index i becomes order i, all or nothing. Each question whose order changes gets a
    revision and a ``question.updated`` event; the reorder is one ``reordered`` audit entry
    (no resource id; before/after: id -> order of the questions whose order changed)."""
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
    was = {i: current[i].sort_order for i in changed}
    new_orders = values(column("id", String), column("position", Integer), name="new_orders").data(
        list(changed.items())
    )
    await _update_each(
        session,
        org,
        {i: question_public(current[i], None) for i in changed},  # their revisions
        Question.id == new_orders.c.id,
        "order",
        [question_audit("reordered", org.actor, None, was, changed)],
        sort_order=new_orders.c.position,
    )
    return len(ids)


async def move_to_category(
    session: AsyncSession, org: Principal, from_category_id: str, to_category_id: str
) -> int:
    """Move every live question of one category to another (category merge and forced delete):
    each moved question is locked, gets a revision, a ``question.updated`` event and an
    ``updated`` audit entry of its ``categoryId``."""
    current = await _lock_live(session, Question.category_id == from_category_id)
    if not current:
        return 0
    before, after = {"categoryId": from_category_id}, {"categoryId": to_category_id}
    return await _update_each(
        session,
        org,
        {i: question_public(q, None) for i, q in current.items()},  # their revisions
        Question.id.in_(list(current)),
        "categoryId",
        [question_audit("updated", org.actor, i, before, after) for i in sorted(current)],
        category_id=to_category_id,
    )
