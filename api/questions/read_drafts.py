"""The ``draft`` of a question as its reads show it (issue 30): ``{updatedAt, updatedBy,
reviewState}`` of its pending version, or null. The reads get it from the same statement (a
LEFT JOIN on ``question_drafts``' primary key): still one round trip. Drafts are internal:
a publishable key's reads show null: each read is told (``drafts``) by its caller, the API
route (``not public_audience()``), the help center (never), the MCP server (by its key).
Writes, events and audit entries keep the live question (``question_public``), without its
draft.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_

from api.questions.models import Question
from api.questions.schemas import question_public
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


def question_read(row: Any, drafts: bool) -> dict[str, Any]:
    """A read's question (a row with ``external_id`` and ``DRAFT_COLUMNS``): the public shape
    (with its ``externalId``) and its ``draft``."""
    return {**question_public(row), "draft": draft_summary(row, drafts)}
