"""Tenant table of audiences (issue 39)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase

TS = DateTime(timezone=True)


class Audience(TenantBase):
    __tablename__ = "audiences"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    slug: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)
    deleted_at: Mapped[datetime | None] = mapped_column(TS)
