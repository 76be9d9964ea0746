"""Tenant tables of team publishing (issue 30): the draft of a question with its review, and
the org's workflow setting."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase
from tenancy.generations import versioned

TS = DateTime(timezone=True)
# review_state values (null: no review asked for).
PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"
REVIEW_STATES = (PENDING, APPROVED, REJECTED)


class QuestionDraft(TenantBase):
    """The pending version of a question, beside the live one (one per question)."""

    __tablename__ = "question_drafts"
    __table_args__ = versioned()  # a question's reads show its draft (cached reads)

    question_id: Mapped[str] = mapped_column(
        ForeignKey("tenant.questions.id", ondelete="CASCADE"), primary_key=True
    )
    changes: Mapped[dict[str, Any]] = mapped_column(JSONB)
    version: Mapped[int] = mapped_column(Integer)
    base_revision: Mapped[int] = mapped_column(Integer)
    updated_by: Mapped[dict[str, str]] = mapped_column(JSONB)
    author: Mapped[str] = mapped_column(String(64))
    review_state: Mapped[str | None] = mapped_column(String(12))
    reviewer_ids: Mapped[list[str]] = mapped_column(JSONB, default=list)
    decided_by: Mapped[dict[str, str] | None] = mapped_column(JSONB)
    decision_comment: Mapped[str | None] = mapped_column(Text)
    approved_version: Mapped[int | None] = mapped_column(Integer)
    scheduled_publish_at: Mapped[datetime | None] = mapped_column(TS)
    force: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)


class WorkflowSettings(TenantBase):
    """One row at most: the org's workflow (absent: the defaults)."""

    __tablename__ = "workflow_settings"

    id: Mapped[bool] = mapped_column(Boolean, primary_key=True, default=True)
    require_review: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(TS)
