"""The ``draft`` of a question as its reads show it (issue 30): ``{updatedAt, updatedBy,
reviewState}`` of its pending version, or null. The reads get it from the same statement (a
LEFT JOIN on ``question_drafts``' primary key): still one round trip. Drafts are internal:
a publishable key's reads show null (``shown``). Writes, events and audit entries keep the
live question as before (``question_public``).

Quart-free (workers read questions too): who is reading is the API's to say, through
``use_public_reader`` (``api.reviews.routes`` registers ``api.binding.public_audience``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import and_

from api.questions.models import Question
from api.reviews.models import QuestionDraft as QuestionDraft
from tenancy.clock import iso

# The draft's columns beside the question's in the Core reads (``queries.in_locale``).
DRAFT_COLUMNS: tuple[Any, ...] = (
    QuestionDraft.question_id.label("draft_question_id"),
    QuestionDraft.updated_at.label("draft_updated_at"),
    QuestionDraft.updated_by.label("draft_updated_by"),
    QuestionDraft.review_state.label("draft_review_state"),
)
DRAFT_ON = and_(QuestionDraft.question_id == Question.id)


# True while a publishable key's request is read (none registered: every reader is internal).
_public_reader: Callable[[], bool] | None = None


def use_public_reader(check: Callable[[], bool]) -> None:
    global _public_reader
    _public_reader = check


def shown(drafts: bool | None) -> bool:
    """Whether the read shows drafts: as asked, else not to a publishable key's request (the
    fast path serves secret keys only, outside a request: it shows them)."""
    if drafts is not None:
        return drafts
    return _public_reader is None or not _public_reader()


def actor_public(actor: dict[str, str]) -> dict[str, str]:
    """An actor in a fixed key order (JSONB keeps its own): what ``ACTOR_SQL`` writes."""
    out = {"type": actor["type"], "id": actor["id"]}
    if actor.get("keyFingerprint") is not None:
        out["keyFingerprint"] = actor["keyFingerprint"]
    return out


def draft_summary(row: Any, drafts: bool) -> dict[str, Any] | None:
    """The ``draft`` of a row selected with ``DRAFT_COLUMNS``."""
    if not drafts or row.draft_question_id is None:
        return None
    return {
        "updatedAt": iso(row.draft_updated_at),
        "updatedBy": actor_public(row.draft_updated_by),
        "reviewState": row.draft_review_state,
    }


# The same in SQL, as JSON text byte for byte what orjson makes of ``draft_summary`` (the
# caller gives the stamp and text helpers of its JSON, alias ``d`` for the draft).
def draft_sql(stamp: Any, text: Any) -> str:
    field = "d.updated_by->>'{}'".format
    actor = (
        f"""'{{"type":' || {text(field("type"))} || ',"id":' || {text(field("id"))}"""
        f" || CASE WHEN {field('keyFingerprint')} IS NULL THEN ''"
        f""" ELSE ',"keyFingerprint":' || {text(field("keyFingerprint"))} END || '}}'"""
    )
    return (
        "CASE WHEN d.question_id IS NULL THEN 'null' ELSE"
        f""" '{{"updatedAt":' || {stamp("d.updated_at")} || ',"updatedBy":' || {actor}"""
        f""" || ',"reviewState":' || COALESCE({text("d.review_state")}, 'null') || '}}' END"""
    )


DRAFT_JOIN_SQL = " LEFT JOIN question_drafts d ON d.question_id = q.id"
