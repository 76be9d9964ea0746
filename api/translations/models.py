"""Tenant tables of translations: one row per resource and locale.

``source_digest`` is the digest of the resource's translatable source fields when the
translation was last written (``source_digest_sql`` computes the current one in SQL, with the
same bytes as ``source_digest`` in Python): a translation is outdated while the two differ.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, DateTime, ForeignKey, String, Text, func, literal
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase
from tenancy.generations import versioned

TS = DateTime(timezone=True)
SEPARATOR = "\x01"  # between fields, so ("ab", "c") and ("a", "bc") differ


class QuestionTranslation(TenantBase):
    __tablename__ = "question_translations"
    __table_args__ = versioned()  # writes change the org's generation (cached reads)

    question_id: Mapped[str] = mapped_column(
        ForeignKey("tenant.questions.id", ondelete="CASCADE"), primary_key=True
    )
    locale: Mapped[str] = mapped_column(String(35), primary_key=True)
    title: Mapped[str] = mapped_column(String(500))
    answer: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(12))
    source_digest: Mapped[str] = mapped_column(String(32))
    search_vector: Mapped[str] = mapped_column(TSVECTOR)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)
    # Who last wrote its text (a member id, else a key fingerprint; null before issue 40):
    # with review required, someone else publishes it.
    author: Mapped[str | None] = mapped_column(String(64))


class CategoryTranslation(TenantBase):
    __tablename__ = "category_translations"
    __table_args__ = versioned()

    category_id: Mapped[str] = mapped_column(
        ForeignKey("tenant.categories.id", ondelete="CASCADE"), primary_key=True
    )
    locale: Mapped[str] = mapped_column(String(35), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    source_digest: Mapped[str] = mapped_column(String(32))
    search_vector: Mapped[str] = mapped_column(TSVECTOR)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)


def source_digest(*fields: str | None) -> str:
    """md5 hex of the source fields (None as empty), as ``source_digest_sql`` computes it."""
    joined = SEPARATOR.join(field or "" for field in fields)
    return hashlib.md5(joined.encode(), usedforsecurity=False).hexdigest()


def source_digest_sql(*columns: Any) -> ColumnElement[str]:
    """The same digest over columns (IMMUTABLE functions only: ``md5``, ``coalesce``, ``||``)."""
    parts: list[ColumnElement[str]] = []
    for i, column in enumerate(columns):
        if i:
            parts.append(literal(SEPARATOR))
        parts.append(func.coalesce(column, literal("")))
    joined = parts[0]
    for part in parts[1:]:
        joined = joined.op("||")(part)
    return func.md5(joined)
