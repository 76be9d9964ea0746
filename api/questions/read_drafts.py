"""The ``draft`` of a question (issue 30): ``{updatedAt, updatedBy, reviewState}`` of its
pending version, or null. The reads get it from the same statement (a LEFT JOIN on
``question_drafts``' primary key): still one round trip. Drafts are internal: a publishable
key's reads show null: each read is told (``drafts``) by its caller, the API route (``not
public_audience()``), the help center (never), the MCP server (by its key).
The writes show it exactly as a secret key's GET does (issue 40: one representation): in
their responses, the ``data`` of their events and their audit snapshots, read in the write's
own statement (``draft_returning``: its ``RETURNING``), so a PATCH costs no more round trips.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import CTE, ColumnElement, and_, func, select

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


def _of_question(column: Any) -> Any:
    """``column`` of the draft of the question the enclosing statement writes (a scalar
    subquery on the draft's primary key, correlated to the question)."""
    return (
        select(column)
        .where(QuestionDraft.question_id == Question.id)
        .correlate_except(QuestionDraft)
        .scalar_subquery()
    )


def draft_returning(cleared: CTE | None = None) -> tuple[ColumnElement[Any], ...]:
    """``DRAFT_COLUMNS`` for the ``RETURNING`` of a statement that writes questions.
    ``cleared``: the statement's ``review_gate.clear_approval`` (returning ``review_state``):
    the statement's own subqueries see the draft as it was before the statement, so the
    state it set wins."""
    state = _of_question(QuestionDraft.review_state)
    if cleared is not None:
        state = func.coalesce(select(cleared.c.review_state).scalar_subquery(), state)
    return (
        _of_question(QuestionDraft.question_id).label("draft_question_id"),
        _of_question(QuestionDraft.updated_at).label("draft_updated_at"),
        _of_question(QuestionDraft.updated_by).label("draft_updated_by"),
        state.label("draft_review_state"),
    )


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


def summary_of(draft: QuestionDraft | None) -> dict[str, Any] | None:
    """``draft_summary`` of a draft already loaded."""
    if draft is None:
        return None
    return {
        "updatedAt": iso(draft.updated_at),
        "updatedBy": actor_public(draft.updated_by),
        "reviewState": draft.review_state,
    }


def question_read(row: Any, drafts: bool) -> dict[str, Any]:
    """A question as read or written (a row with ``external_id`` and ``DRAFT_COLUMNS``, or
    ``draft_returning``): the public shape and its ``draft`` (``drafts``: whether the reader
    sees drafts; a write's result, its events and audit: always)."""
    return question_public(row, draft_summary(row, drafts))
