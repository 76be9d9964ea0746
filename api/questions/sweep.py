"""Work the actors in ``tasks/`` run on one org's schema, in the caller's transaction:
``publish_due`` publishes the org's due scheduled questions, ``purge_expired`` removes
questions soft-deleted long enough ago and expired idempotency keys.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.questions.drafts import next_draft_due, publish_due_drafts
from api.questions.idempotency import delete_expired_keys
from api.questions.models import RETURNED, PublishSchedule, Question
from api.questions.read_drafts import draft_returning, question_read
from api.questions.revisions import add_revisions, changed_fields, question_audit
from api.questions.rules import LIVE, PUBLISHED, SCHEDULED
from api.questions.schemas import question_public
from tenancy.audit import Actor
from tenancy.clock import utcnow
from tenancy.outbox import record_events
from tenancy.schedule import reset_due


async def publish_due(session: AsyncSession, org_id: str, actor: Actor) -> int:
    """Publish this org's due scheduled questions (rows another sweep holds are skipped), then
    recompute the org's next due time. Each is a ``published`` entry of the org's audit log by
    ``actor`` (its changed fields). The caller holds the org's schedule row and commits."""
    now = utcnow()
    due = (
        (
            await session.execute(
                select(Question)
                .where(LIVE, Question.status == SCHEDULED, Question.scheduled_publish_at <= now)
                .order_by(Question.scheduled_publish_at, Question.id)
                .with_for_update(skip_locked=True)
            )
        )
        .scalars()
        .all()
    )
    events = []
    for question in due:
        before = question_public(question, None)  # its revision, the audit's changed fields
        number = question.revision_count + 1
        row = (
            await session.execute(
                update(Question)
                .where(Question.id == question.id)
                .values(
                    status=PUBLISHED,
                    published_at=now,
                    scheduled_publish_at=None,
                    updated_at=now,
                    revision_count=number,
                )
                .returning(*RETURNED, *draft_returning())
            )
        ).one()
        await add_revisions(
            session,
            actor,
            ["status", "scheduledPublishAt", "publishedAt"],
            now,
            [(question.id, number, before)],
        )
        after = question_read(row, True)  # as GET shows it, its draft included
        audit = question_audit("published", actor, question.id, *changed_fields(before, after))
        events += [("question.published", after), ("question.updated", after), audit]
    if events:
        await record_events(session, org_id, events)
    published = len(due) + await publish_due_drafts(session, org_id, actor)  # issue 30
    next_due = (
        await session.execute(
            select(func.min(Question.scheduled_publish_at)).where(
                LIVE, Question.status == SCHEDULED
            )
        )
    ).scalar_one()
    next_due = min(filter(None, (next_due, await next_draft_due(session))), default=None)
    await reset_due(session, PublishSchedule, org_id, next_due)
    return published


async def purge_expired(session: AsyncSession, deleted_before: datetime) -> dict[str, int]:
    """Remove questions soft-deleted before ``deleted_before`` and expired idempotency keys."""
    questions = (
        await session.execute(
            delete(Question)
            .where(Question.deleted_at.is_not(None), Question.deleted_at < deleted_before)
            .returning(Question.id)
        )
    ).all()
    keys = await delete_expired_keys(session)
    return {"questions": len(questions), "idempotencyKeys": keys}
