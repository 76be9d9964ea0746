"""Drafts of questions (issue 30): the pending version of a question, stored beside the live
one, which readers, the help center, publishable keys, ``/answers`` and webhooks keep seeing
until the draft is published. Publishing applies the draft as one PATCH would (one revision,
the usual events and audit entry) and makes the question published; with a time, the publish
sweep does it then (``publish_due_drafts``). Nothing here commits."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.service import checked_audiences
from api.errors import ValidationFailed, field_error
from api.questions.models import PublishSchedule, Question
from api.questions.queries import load
from api.questions.read_drafts import summary_of
from api.questions.review_gate import DRAFT_FIELDS as DRAFT_FIELDS
from api.questions.review_gate import live_value
from api.questions.revisions import question_audit
from api.questions.rules import LIVE, PUBLISHED, SLUGS, category_id, check_not_null
from api.questions.schemas import question_public
from api.questions.service import update_question
from api.reviews.errors import DraftConflict, DraftNotFound, ReviewRequired
from api.reviews.models import APPROVED, QuestionDraft
from api.reviews.workflow import require_review
from tenancy.audit import Actor
from tenancy.clock import iso, utcnow
from tenancy.outbox import record_events
from tenancy.principal import Principal
from tenancy.schedule import mark_due


def pending_version(question: Question, changes: dict[str, Any]) -> dict[str, Any]:
    """The editable fields as they will be once the draft is published."""
    live = {name: live_value(question, col) for name, col in DRAFT_FIELDS.items()}
    return {**live, **changes}


def draft_public(draft: QuestionDraft, question: Question) -> dict[str, Any]:
    """A draft as ``GET …/draft`` returns it (also the ``data`` of review events)."""
    decision = None
    if draft.decided_by is not None:
        decision = {"by": draft.decided_by, "comment": draft.decision_comment}
    return {
        "questionId": question.id,
        **pending_version(question, draft.changes),
        "changedFields": [n for n in DRAFT_FIELDS if n in draft.changes],
        "version": draft.version,
        "reviewState": draft.review_state,
        "reviewerIds": list(draft.reviewer_ids),
        "decision": decision,
        "approvedVersion": draft.approved_version,
        "scheduledPublishAt": iso(draft.scheduled_publish_at),
        "createdAt": iso(draft.created_at),
        "updatedAt": iso(draft.updated_at),
        "updatedBy": draft.updated_by,
    }


async def find_draft(
    session: AsyncSession, question_id: str, *, lock: bool = False
) -> QuestionDraft | None:
    stmt = select(QuestionDraft).where(QuestionDraft.question_id == question_id)
    if lock:
        stmt = stmt.with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()


async def locked_draft(session: AsyncSession, ref: str) -> tuple[Question, QuestionDraft]:
    """The live question (row-locked) and its draft (row-locked), else 404."""
    question = await load(session, ref, lock=True)
    draft = await find_draft(session, question.id, lock=True)
    if draft is None:
        raise DraftNotFound()
    return question, draft


async def get_draft(session: AsyncSession, ref: str) -> dict[str, Any]:
    question = await load(session, ref)
    draft = await find_draft(session, question.id)
    if draft is None:
        raise DraftNotFound()
    return draft_public(draft, question)


async def _checked(session: AsyncSession, question: Question, changes: dict[str, Any]) -> None:
    if not changes:
        raise ValidationFailed(
            "A draft changes at least one of title, answer, categoryId, slug, order, audiences.",
            details=field_error("title", "nothing to change"),
        )
    check_not_null(changes)
    if "slug" in changes and changes["slug"] != question.slug:
        SLUGS.check_manual(changes["slug"])
    if "categoryId" in changes:
        await category_id(session, changes["categoryId"])  # 400 category_not_found
    if "audiences" in changes:  # kept as a direct write keeps them (each once, in order)
        changes["audiences"] = await checked_audiences(session, changes["audiences"], "audiences")


async def save_draft(
    session: AsyncSession, org: Principal, ref: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """PUT: the draft becomes exactly ``changes``. A change clears approvals (a review asked
    for stays asked for: ``pending``) and a scheduled publish."""
    org.require("write")
    question = await load(session, ref, lock=True)
    await _checked(session, question, changes)
    now = utcnow()
    actor = org.actor
    stmt = insert(QuestionDraft).values(
        question_id=question.id,
        changes=changes,
        version=1,
        base_revision=question.revision_count,
        updated_by=actor,
        author=org.author,
        review_state=None,
        reviewer_ids=[],
        force=False,
        created_at=now,
        updated_at=now,
    )
    # A review asked for stays asked for (``pending``) through changes.
    before = await find_draft(session, question.id)
    await session.execute(_upsert(stmt, before))
    draft = await find_draft(session, question.id)
    assert draft is not None
    await session.refresh(draft)  # the session may hold the row as it was before
    public = draft_public(draft, question)
    audit = question_audit("draft_saved", actor, question.id, None, public)
    await record_events(session, org.id, [audit])
    return public


def _upsert(stmt: Any, before: QuestionDraft | None) -> Any:
    """The draft's upsert with the review state it keeps (``pending`` once asked for)."""
    kept = "pending" if before is not None and before.review_state is not None else None
    return stmt.on_conflict_do_update(
        index_elements=[QuestionDraft.question_id],
        set_={
            "changes": stmt.excluded.changes,
            "version": QuestionDraft.version + 1,
            "updated_by": stmt.excluded.updated_by,
            "author": stmt.excluded.author,
            "review_state": kept,
            "decided_by": None,
            "decision_comment": None,
            "approved_version": None,
            "scheduled_publish_at": None,
            "force": False,
            "updated_at": stmt.excluded.updated_at,
        },
    )


async def discard_draft(session: AsyncSession, org: Principal, ref: str) -> None:
    org.require("write")
    question, draft = await locked_draft(session, ref)
    public = draft_public(draft, question)
    await session.execute(delete(QuestionDraft).where(QuestionDraft.question_id == question.id))
    audit = question_audit("draft_discarded", org.actor, question.id, public, None)
    await record_events(session, org.id, [audit])


def approved(draft: QuestionDraft) -> bool:
    """Four eyes: approved, exactly as it is now, by someone other than its last author."""
    return (
        draft.review_state == APPROVED
        and draft.approved_version == draft.version
        and draft.decided_by is not None
        and draft.decided_by.get("id") != draft.author
    )


async def publish_draft(
    session: AsyncSession,
    org: Principal,
    ref: str,
    *,
    force: bool = False,
    at: datetime | None = None,
) -> tuple[str, dict[str, Any]]:
    """Publish the draft now (``("question", Question)``) or, with ``at``, have the publish
    sweep do it then (``("draft", Draft)``). 409 ``draft_conflict`` when the question changed
    after the draft was started, unless ``force``; 403 ``review_required`` when the org
    requires review and the draft is not approved as it is."""
    org.require("write")
    question, draft = await locked_draft(session, ref)
    public = draft_public(draft, question)
    if not force and question.revision_count != draft.base_revision:
        raise DraftConflict(live=question_public(question, summary_of(draft)), draft=public)
    if await require_review(session) and not approved(draft):
        raise ReviewRequired()
    if at is None:
        return "question", await apply_draft(session, org, question, draft)
    if at <= utcnow():
        raise ValidationFailed(
            "scheduledPublishAt must be in the future.",
            details=field_error("scheduledPublishAt", "in the past"),
        )
    await session.execute(
        update(QuestionDraft)
        .where(QuestionDraft.question_id == question.id)
        .values(scheduled_publish_at=at, force=force)
    )
    await mark_due(session, PublishSchedule, org.id, at)
    await session.refresh(draft)
    scheduled = draft_public(draft, question)
    audit = question_audit(
        "draft_scheduled", org.actor, question.id, None, {"scheduledPublishAt": iso(at)}
    )
    await record_events(session, org.id, [audit])
    return "draft", scheduled


async def apply_draft(
    session: AsyncSession, org: Principal, question: Question, draft: QuestionDraft
) -> dict[str, Any]:
    """The draft's changes as one PATCH that also publishes; the draft is gone after."""
    changes = {**draft.changes, "status": PUBLISHED, "scheduledPublishAt": None}
    # Gone first: the PATCH's response and events show the question without it (issue 40).
    await session.execute(delete(QuestionDraft).where(QuestionDraft.question_id == question.id))
    published = await update_question(session, org, question.id, changes, reviewed=True)
    audit = question_audit(
        "draft_published", org.actor, question.id, None, {"version": draft.version}
    )
    await record_events(session, org.id, [audit])
    return published


async def publish_due_drafts(session: AsyncSession, org_id: str, actor: Actor) -> int:
    """Publish the org's drafts whose time has come (rows another sweep holds are skipped).
    A draft that may no longer be published (a conflict without ``force``; under review, not
    approved as it is) keeps its content, loses its time, and is audited
    ``draft_publish_failed``."""
    now = utcnow()
    due = (
        (
            await session.execute(
                select(QuestionDraft)
                .join(Question, Question.id == QuestionDraft.question_id)
                .where(LIVE, QuestionDraft.scheduled_publish_at <= now)
                .order_by(QuestionDraft.scheduled_publish_at, QuestionDraft.question_id)
                .with_for_update(skip_locked=True)
            )
        )
        .scalars()
        .all()
    )
    org = Principal(org_id, "", "FREE", "", "", ("admin",), acting=tuple(sorted(actor.items())))
    review = await require_review(session) if due else False
    published = 0
    for draft in due:
        question = await load(session, draft.question_id, lock=True)
        reason = None
        if not draft.force and question.revision_count != draft.base_revision:
            reason = "draft_conflict"
        elif review and not approved(draft):
            reason = "review_required"
        if reason is None:
            await apply_draft(session, org, question, draft)
            published += 1
            continue
        await session.execute(
            update(QuestionDraft)
            .where(QuestionDraft.question_id == question.id)
            .values(scheduled_publish_at=None)
        )
        audit = question_audit("draft_publish_failed", actor, question.id, None, {"reason": reason})
        await record_events(session, org_id, [audit])
    return published


async def next_draft_due(session: AsyncSession) -> datetime | None:
    """The earliest scheduled publish of a draft of a live question."""
    return (
        await session.execute(
            select(func.min(QuestionDraft.scheduled_publish_at))
            .join(Question, Question.id == QuestionDraft.question_id)
            .where(LIVE)
        )
    ).scalar_one()
