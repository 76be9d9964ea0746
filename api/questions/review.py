"""Review before publishing (issue 30). With the org's ``workflow.requireReview`` on, a
question reaches ``published`` only from a draft approved, exactly as it is, by a member
other than its last author (four eyes): ``api.questions.review_gate`` refuses every other
way there, inside the commands (create, PATCH, restore, imports: 403 ``review_required``).
Asking for review, approving and rejecting are audited and emit
``question.review_requested``, ``question.approved``, ``question.rejected``. Every step
locks the question, then its draft: a change of the draft and a decision on it are
serialized, and an approval names the version it saw."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationFailed
from api.members.models import Member
from api.questions.drafts import draft_public, locked_draft
from api.questions.models import Question
from api.questions.revisions import question_audit
from api.reviews.errors import DraftChanged, MemberRequired, SelfApproval
from api.reviews.models import APPROVED, PENDING, REJECTED, QuestionDraft
from tenancy.outbox import record_events
from tenancy.principal import Principal

# ---- the review of a draft -------------------------------------------------------------------


async def _active_members(session: AsyncSession, ids: list[str]) -> None:
    found = set(
        (
            await session.execute(
                select(Member.id).where(Member.id.in_(ids), Member.deactivated_at.is_(None))
            )
        ).scalars()
    )
    unknown = [i for i in ids if i not in found]
    if unknown:
        raise ValidationFailed(
            "reviewerIds must name active members of this organization.",
            details=[{"field": "reviewerIds", "issue": f"no active member {i}"} for i in unknown],
        )


async def _emit(
    session: AsyncSession,
    org: Principal,
    event: str,
    action: str,
    question_id: str,
    public: dict[str, Any],
    change: dict[str, Any],
) -> None:
    audit = question_audit(action, org.actor, question_id, None, change)
    await record_events(session, org.id, [(event, public), audit])


async def request_review(
    session: AsyncSession, org: Principal, ref: str, reviewer_ids: list[str]
) -> dict[str, Any]:
    """Ask for review of the draft (optionally of named members); earlier decisions go."""
    reviewers = list(dict.fromkeys(reviewer_ids))
    if reviewers:
        await _active_members(session, reviewers)
    question, draft = await locked_draft(session, ref)
    await session.execute(
        update(QuestionDraft)
        .where(QuestionDraft.question_id == question.id)
        .values(
            review_state=PENDING,
            reviewer_ids=reviewers,
            decided_by=None,
            decision_comment=None,
            approved_version=None,
        )
    )
    await session.refresh(draft)
    public = draft_public(draft, question)
    await _emit(
        session,
        org,
        "question.review_requested",
        "review_requested",
        question.id,
        public,
        {"reviewState": PENDING, "reviewerIds": reviewers, "version": draft.version},
    )
    return public


async def decide(
    session: AsyncSession,
    org: Principal,
    ref: str,
    *,
    approve: bool,
    comment: str | None,
    version: int | None,
) -> dict[str, Any]:
    """Approve or reject the draft as it is now (``version``: the one the reviewer read; 409
    ``draft_changed`` when it moved on). Only a member decides (403 ``member_required``); the
    draft's last author may not approve it (403 ``self_approval``)."""
    org.require("review")
    if org.member_id is None:
        raise MemberRequired()
    question, draft = await locked_draft(session, ref)
    if version is not None and version != draft.version:
        raise DraftChanged()
    if approve and draft.author == org.author:
        raise SelfApproval()
    state = APPROVED if approve else REJECTED
    await session.execute(
        update(QuestionDraft)
        .where(QuestionDraft.question_id == question.id)
        .values(
            review_state=state,
            decided_by=org.actor,
            decision_comment=comment,
            approved_version=draft.version if approve else None,
        )
    )
    await session.refresh(draft)
    public = draft_public(draft, question)
    await _emit(
        session,
        org,
        f"question.{state}",
        state,
        question.id,
        public,
        {"reviewState": state, "version": draft.version, "comment": comment},
    )
    return public


async def list_reviews(
    session: AsyncSession,
    *,
    state: str,
    reviewer: str | None,
    limit: int,
    after: list[Any] | None,
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """Drafts in review ``state``, optionally those naming ``reviewer``, oldest change first;
    the sort key of the last item when more follow."""
    stmt = (
        select(QuestionDraft, Question)
        .join(Question, Question.id == QuestionDraft.question_id)
        .where(Question.deleted_at.is_(None), QuestionDraft.review_state == state)
        .order_by(QuestionDraft.updated_at, QuestionDraft.question_id)
        .limit(limit + 1)
    )
    if reviewer is not None:
        stmt = stmt.where(QuestionDraft.reviewer_ids.contains([reviewer]))
    if after is not None:
        at = datetime.fromisoformat(after[0])
        stmt = stmt.where(
            (QuestionDraft.updated_at > at)
            | ((QuestionDraft.updated_at == at) & (QuestionDraft.question_id > after[1]))
        )
    rows = (await session.execute(stmt)).all()
    items = [draft_public(d, q) for d, q in rows[:limit]]
    if len(rows) <= limit:
        return items, None
    last = rows[limit - 1][0]
    return items, [last.updated_at.isoformat(), last.question_id]
