"""Tenant table of categories."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase
from tenancy.generations import versioned

TS = DateTime(timezone=True)


class Category(TenantBase):
    __tablename__ = "categories"
    __table_args__ = versioned()  # writes change the org's generation (cached reads)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    slug: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(String(200))
    # The language of name and description: the org's default locale when it was created.
    locale: Mapped[str] = mapped_column(String(35))
    description: Mapped[str | None] = mapped_column(Text)
    sort_order: Mapped[int] = mapped_column(Integer, default=0)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("tenant.categories.id"))
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    search_vector: Mapped[str] = mapped_column(TSVECTOR)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)
    deleted_at: Mapped[datetime | None] = mapped_column(TS)
    # Audience slugs (issue 39): empty, everyone; else readers of at least one of them.
    audiences: Mapped[list[str]] = mapped_column(ARRAY(String(100)), default=list)
    # The non-empty ``audiences`` of this category and its ancestors, root first (derived).
    audience_path: Mapped[list[list[str]]] = mapped_column(JSONB, default=list)
