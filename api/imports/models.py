"""Tenant tables of imports: the job and its stored upload (each imported resource's source:
``api/external_ids.py``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase

TS = DateTime(timezone=True)


class Import(TenantBase):
    __tablename__ = "imports"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    format: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(12))
    dry_run: Mapped[bool] = mapped_column(Boolean)
    options: Mapped[dict[str, Any]] = mapped_column(JSONB)
    actor: Mapped[dict[str, str]] = mapped_column(JSONB)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    counts: Mapped[dict[str, Any]] = mapped_column(JSONB)  # ``report.empty_counts``
    progress: Mapped[dict[str, int]] = mapped_column(JSONB)
    errors: Mapped[list[dict[str, str]]] = mapped_column(JSONB)
    notes: Mapped[list[dict[str, str]]] = mapped_column(JSONB)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(TS)
    started_at: Mapped[datetime | None] = mapped_column(TS)
    finished_at: Mapped[datetime | None] = mapped_column(TS)


class ImportChunk(TenantBase):
    __tablename__ = "import_chunks"

    import_id: Mapped[str] = mapped_column(
        ForeignKey("tenant.imports.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
