"""The review rules every write of a question passes (issue 30, made one door by issue 40).

With the org's ``workflow.requireReview`` on, content reaches readers only as a draft approved,
exactly as it is, by a member other than its last author (four eyes). The commands that write
questions call these rules themselves (``api.questions.service``: create, PATCH, restore, the
import's batches; ``api.questions.drafts``: publish), so no door (REST, MCP, import, CLI) can
walk around them:

- creating a question published or scheduled, or a PATCH or revision restore that would publish
  or schedule it or change a live one's content, is 403 ``review_required``;
- any change of a question clears the approval of its draft (``clear_approval``, in the same
  statement as the change): an approval names the content a reviewer saw, not a question id,
  so ``force`` cannot publish text no reviewer saw.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import CTE, and_, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.questions.models import Question
from api.questions.rules import PUBLISHED, SCHEDULED, UNSET, state_on_create, state_on_update
from api.reviews.errors import ReviewRequired
from api.reviews.models import APPROVED, PENDING, QuestionDraft
from api.reviews.workflow import require_review

GOING_LIVE = (PUBLISHED, SCHEDULED)
# The fields a draft may change (public names) and the question's column of each.
DRAFT_FIELDS = {
    "title": "title",
    "answer": "answer",
    "categoryId": "category_id",
    "slug": "slug",
    "order": "sort_order",
    "audiences": "audiences",  # who may read it (issue 39): reviewed like its content
}


async def check_create(session: AsyncSession, status: str, at: Any) -> None:
    """A question created published or scheduled skips review: refused when it is required."""
    if state_on_create(status, at)[0] in GOING_LIVE and await require_review(session):
        raise ReviewRequired()


def goes_live_unreviewed(question: Question, changes: dict[str, Any]) -> bool:
    """``changes`` would publish or schedule ``question``, or change a live one's content."""
    status, _ = state_on_update(
        question.status,
        question.scheduled_publish_at,
        changes.get("status"),
        changes.get("scheduledPublishAt", UNSET),
    )
    if status not in GOING_LIVE:
        return False
    if status != question.status:
        return True
    # Who may read a live question is part of what reviewers approve (issue 39): under
    # review its audiences change through a draft, as its title does.
    return any(
        name in changes and changes[name] != live_value(question, col)
        for name, col in DRAFT_FIELDS.items()
    )


def live_value(question: Question, column: str) -> Any:
    """The question's value of a ``DRAFT_FIELDS`` column as a body names it (a list for
    ``audiences``)."""
    value = getattr(question, column)
    return list(value or ()) if column == "audiences" else value


async def check_change(
    session: AsyncSession, question: Question, changes: dict[str, Any], *, reviewed: bool
) -> None:
    """403 ``review_required`` for a change of the (locked) ``question`` that would reach
    readers unreviewed; ``reviewed``: the change is an approved draft being published."""
    if not reviewed and goes_live_unreviewed(question, changes) and await require_review(session):
        raise ReviewRequired()


def clear_approval(question_id: str) -> CTE:
    """A CTE for the statement that changes the question: its draft's approval goes (the
    draft goes back to ``pending``, its decision with it)."""
    return (
        update(QuestionDraft)
        .where(
            and_(QuestionDraft.question_id == question_id, QuestionDraft.review_state == APPROVED)
        )
        .values(review_state=PENDING, decided_by=None, decision_comment=None, approved_version=None)
        .returning(QuestionDraft.review_state)  # the statement's response shows it (issue 40)
        .cte("cleared_approval")
    )
