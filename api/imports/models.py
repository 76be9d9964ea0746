"""Tenant tables of imports: the job, its stored upload, and each imported resource's source."""

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
    Select,
    String,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase

TS = DateTime(timezone=True)


class ExternalRef(TenantBase):
    """The resource an import made of an item of a source (``zendesk:360012345``)."""

    __tablename__ = "external_refs"

    kind: Mapped[str] = mapped_column(String(12), primary_key=True)  # question | category
    external_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    resource_id: Mapped[str] = mapped_column(String(40))


class Import(TenantBase):
    __tablename__ = "imports"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    format: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(12))
    dry_run: Mapped[bool] = mapped_column(Boolean)
    options: Mapped[dict[str, Any]] = mapped_column(JSONB)
    actor: Mapped[dict[str, str]] = mapped_column(JSONB)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    counts: Mapped[dict[str, int]] = mapped_column(JSONB)
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


def imported_as(kind: str, external_id: str) -> Select[str]:
    """The id of the resource (``question``, ``category``) an import made of ``external_id``:
    the ``?externalId=`` filter of the lists."""
    return select(ExternalRef.resource_id).where(
        ExternalRef.kind == kind, ExternalRef.external_id == external_id
    )
