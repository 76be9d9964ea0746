"""Word-level diffs of a question's title and answer between two of its versions (issue 30):
a revision's snapshot against the live question, its draft, or another revision. The diff is
``difflib``'s (the standard library's sequence matcher) over words, spaces and punctuation;
it runs off the event loop (an answer has up to 100,000 characters)."""

from __future__ import annotations

import asyncio
import difflib
import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import RevisionNotFound
from api.questions.drafts import find_draft, pending_version
from api.questions.models import QuestionRevision
from api.questions.queries import load
from api.reviews.errors import DraftNotFound

TOKENS = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)
COMPARED = ("title", "answer")


def word_diff(before: str, after: str) -> list[dict[str, str]]:
    """``[{"op": "equal"|"delete"|"insert", "text": …}]``: ``before`` becomes ``after``;
    consecutive pieces of one op are merged."""
    a, b = TOKENS.findall(before), TOKENS.findall(after)
    ops: list[dict[str, str]] = []

    def add(op: str, words: list[str]) -> None:
        if not words:
            return
        text = "".join(words)
        if ops and ops[-1]["op"] == op:
            ops[-1]["text"] += text
        else:
            ops.append({"op": op, "text": text})

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("equal", a[i1:i2])
        else:
            add("delete", a[i1:i2])
            add("insert", b[j1:j2])
    return ops


def diff_versions(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {field: word_diff(before[field], after[field]) for field in COMPARED}


async def _snapshot(session: AsyncSession, question_id: str, revision_id: str) -> dict[str, Any]:
    snapshot = await session.scalar(
        select(QuestionRevision.snapshot).where(
            QuestionRevision.id == revision_id, QuestionRevision.question_id == question_id
        )
    )
    if snapshot is None:
        raise RevisionNotFound()
    return dict(snapshot)


async def revision_diff(
    session: AsyncSession, ref: str, revision_id: str, against: str
) -> dict[str, Any]:
    """The diff from revision ``revision_id`` (its snapshot) to ``against``: ``live``,
    ``draft`` (404 ``draft_not_found`` without one) or another revision of the question (404
    ``revision_not_found`` for one of another question)."""
    question = await load(session, ref)
    before = await _snapshot(session, question.id, revision_id)
    if against == "live":
        after = {"title": question.title, "answer": question.answer}
    elif against == "draft":
        draft = await find_draft(session, question.id)
        if draft is None:
            raise DraftNotFound()
        after = pending_version(question, draft.changes)
    else:
        after = await _snapshot(session, question.id, against)
    changes = await asyncio.to_thread(diff_versions, before, after)
    return {"revisionId": revision_id, "against": against, **changes}
