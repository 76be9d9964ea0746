"""Tenant tables of exports: the job and its bundle (a zip, in pieces), kept until it expires."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase

TS = DateTime(timezone=True)


class Export(TenantBase):
    __tablename__ = "exports"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    status: Mapped[str] = mapped_column(String(12))
    options: Mapped[dict[str, Any]] = mapped_column(JSONB)
    actor: Mapped[dict[str, str]] = mapped_column(JSONB)
    counts: Mapped[dict[str, int]] = mapped_column(JSONB)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(TS)
    finished_at: Mapped[datetime | None] = mapped_column(TS)
    expires_at: Mapped[datetime | None] = mapped_column(TS)


class ExportChunk(TenantBase):
    __tablename__ = "export_chunks"

    export_id: Mapped[str] = mapped_column(
        ForeignKey("tenant.exports.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
