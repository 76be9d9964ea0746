"""Tenant tables of webhooks and their deliveries, and the shared delivery schedule."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Table, Text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import SharedBase, TenantBase
from tenancy.schedule import DueSchedule

TS = DateTime(timezone=True)


class Webhook(TenantBase):
    __tablename__ = "webhooks"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(ARRAY(String(40)))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    description: Mapped[str | None] = mapped_column(String(500))
    secret_ciphertext: Mapped[str] = mapped_column(Text)
    delivery_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)
    deleted_at: Mapped[datetime | None] = mapped_column(TS)


class Delivery(TenantBase):
    __tablename__ = "deliveries"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("tenant.webhooks.id"))
    event: Mapped[str] = mapped_column(String(40))
    data: Mapped[dict[str, Any]] = mapped_column(JSONB)
    status: Mapped[str] = mapped_column(String(12))
    attempts: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, default=list)
    attempt_count: Mapped[int] = mapped_column(Integer, default=0)
    lease_token: Mapped[str | None] = mapped_column(String(32))
    attempt_started_at: Mapped[datetime | None] = mapped_column(TS)
    next_attempt_at: Mapped[datetime | None] = mapped_column(TS)
    replay_of: Mapped[str | None] = mapped_column(String(40))
    # When the body last sent (or, before any attempt, to be sent) was signed: the public
    # ``payload`` is derived from it and ``data`` (the event data is stored once).
    sent_at: Mapped[datetime] = mapped_column(TS)
    created_at: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS)


class DeliverySchedule(DueSchedule, SharedBase):
    """Per org, the earliest time a pending delivery may need re-driving (a lower bound)."""

    __tablename__ = "delivery_schedule"


# Core handles for the hot paths (fan-out, claim, record): plain table statements skip the
# ORM's bulk machinery, which costs more CPU than the SQL itself there.
WEBHOOKS = cast(Table, Webhook.__table__)
DELIVERIES = cast(Table, Delivery.__table__)
