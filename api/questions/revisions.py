"""A question's revisions: each change writes one (``add_revisions``, which keeps the
``REVISIONS_KEPT`` newest of each question), and a restore reads one back as the changes of a
new PATCH (``revision_changes``). Each change is also an entry of the org's audit log
(``question_audit``: the ``audit`` outbox event the writer records with its other events).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import RevisionNotFound
from api.questions.models import Question, QuestionRevision
from api.questions.schemas import snapshot_of
from tenancy.audit import AUDIT_EVENT, Actor, audit_payload
from tenancy.ids import new_id

REVISIONS_KEPT = 50
# Bookkeeping, not a change a reader of the audit log looks for; and the draft's summary,
# which the draft's own entries audit (``draft_saved``, ``approved``, ...), not an update.
_NOT_AUDITED = frozenset({"updatedAt", "draft"})


def question_audit(
    action: str, actor: Actor, question_id: str | None, before: Any, after: Any
) -> tuple[str, dict[str, Any]]:
    """The ``audit`` outbox event of a change to questions (``record_events`` it, or fold it
    into a statement's ``outbox_parameters``, with the change's other events)."""
    data = audit_payload(
        resource="question",
        resource_id=question_id,
        action=action,
        actor=actor,
        before=before,
        after=after,
    )
    return AUDIT_EVENT, data


def changed_fields(
    before: dict[str, Any], after: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The public fields an update changed, as they were and as they are (``updatedAt`` and
    ``draft`` left out): an update's audit ``before`` and ``after``."""
    names = [n for n in after if n not in _NOT_AUDITED and before.get(n) != after[n]]
    return {n: before.get(n) for n in names}, {n: after[n] for n in names}


async def add_revisions(
    session: AsyncSession,
    actor: Actor,
    changed: list[str],
    now: datetime,
    entries: Sequence[tuple[str, int, dict[str, Any]]],
) -> None:
    """One revision per ``(question id, revision number, public shape before the change)``,
    all by ``actor`` changing the same fields; then prune the questions past
    ``REVISIONS_KEPT``. Each question's row must already hold its new revision count."""
    if not entries:
        return
    await session.execute(
        insert(QuestionRevision),
        [
            {
                "id": new_id("rev"),
                "question_id": question_id,
                "number": number,
                "actor": actor,
                "changed_fields": changed,
                "snapshot": snapshot_of(before),
                "created_at": now,
            }
            for question_id, number, before in entries
        ],
    )
    await _prune(
        session, [question_id for question_id, number, _ in entries if number > REVISIONS_KEPT]
    )


async def _prune(session: AsyncSession, question_ids: list[str]) -> None:
    """Keep the 50 newest revisions of each question."""
    if not question_ids:
        return
    await session.execute(
        delete(QuestionRevision).where(
            QuestionRevision.question_id == Question.id,
            Question.id.in_(question_ids),
            QuestionRevision.number <= Question.revision_count - REVISIONS_KEPT,
        )
    )


async def revision_changes(
    session: AsyncSession, question_id: str, revision_id: str
) -> dict[str, Any]:
    """The snapshot of one of the question's revisions, as PATCH changes (404 if none)."""
    revision = (
        await session.execute(
            select(QuestionRevision).where(
                QuestionRevision.id == revision_id, QuestionRevision.question_id == question_id
            )
        )
    ).scalar_one_or_none()
    if revision is None:
        raise RevisionNotFound()
    changes = dict(revision.snapshot)
    if changes.get("scheduledPublishAt") is not None:
        changes["scheduledPublishAt"] = datetime.fromisoformat(changes["scheduledPublishAt"])
    return changes
