"""Tenant tables of questions (questions, their revisions, idempotency keys of creates) and the
shared index of each org's next scheduled publish time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlalchemy.orm import Mapped, column_property, mapped_column

from api.external_ids import external_id_column, external_id_of
from tenancy.db import SharedBase, TenantBase
from tenancy.generations import versioned
from tenancy.schedule import DueSchedule

TS = DateTime(timezone=True)


class Question(TenantBase):
    __tablename__ = "questions"
    # Writes change the org's generations (cached reads); a create only the lists' one.
    __table_args__ = versioned(insert_keeps_items=True)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    slug: Mapped[str] = mapped_column(String(200))
    # The language of title and answer: the org's default locale when it was created.
    locale: Mapped[str] = mapped_column(String(35))
    title: Mapped[str] = mapped_column(String(500))
    answer: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(12))
    category_id: Mapped[str] = mapped_column(ForeignKey("tenant.categories.id"))
    sort_order: Mapped[int] = mapped_column(Integer, default=0)
    published_at: Mapped[datetime | None] = mapped_column(TS)
    scheduled_publish_at: Mapped[datetime | None] = mapped_column(TS)
    search_vector: Mapped[str] = mapped_column(TSVECTOR)
    revision_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)
    deleted_at: Mapped[datetime | None] = mapped_column(TS)
    # Audience slugs (issue 39): empty, everyone; else readers of at least one of them.
    audiences: Mapped[list[str]] = mapped_column(ARRAY(String(100)), default=list)
    # Its import's source (``api/external_ids.py``), loaded with the question: the responses
    # of writes and the events show it as the reads do.
    external_id: Mapped[str | None] = column_property(external_id_of("question", id))


# What an UPDATE returns of a question: its columns and its ``external_id``.
RETURNED = (*Question.__table__.c, external_id_column("question", Question.id))


class QuestionRevision(TenantBase):
    __tablename__ = "question_revisions"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    question_id: Mapped[str] = mapped_column(ForeignKey("tenant.questions.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    actor: Mapped[dict[str, str]] = mapped_column(JSONB)
    changed_fields: Mapped[list[str]] = mapped_column(JSONB)
    snapshot: Mapped[dict[str, Any]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(TS)


class IdempotencyKey(TenantBase):
    __tablename__ = "idempotency_keys"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_body: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(TS)


class PublishSchedule(DueSchedule, SharedBase):
    """Each org's earliest scheduled publish time (never later than the real one), so the
    sweep finds due orgs in one query instead of visiting every tenant schema."""

    __tablename__ = "publish_schedule"
