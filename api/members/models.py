"""The org's members (issue 30): people, each with a role that caps the scopes of their keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase

TS = DateTime(timezone=True)


class Member(TenantBase):
    __tablename__ = "members"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    email: Mapped[str] = mapped_column(String(254))
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)
    deactivated_at: Mapped[datetime | None] = mapped_column(TS)
