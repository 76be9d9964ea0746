"""Shared tables of billing: Stripe events (stored once by id) and the subscriptions they
were applied to (the order guard: ``last_event_created``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, ForeignKey, String, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import SharedBase

TS = DateTime(timezone=True)


class StripeEvent(SharedBase):
    __tablename__ = "stripe_events"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    type: Mapped[str] = mapped_column(String(100))
    created: Mapped[datetime] = mapped_column(TS)
    payload: Mapped[dict[str, Any]] = mapped_column(JSONB)
    received_at: Mapped[datetime] = mapped_column(TS, server_default=func.now())
    processed_at: Mapped[datetime | None] = mapped_column(TS)
    outcome: Mapped[str | None] = mapped_column(String(40))


class StripeSubscription(SharedBase):
    __tablename__ = "stripe_subscriptions"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("shared.organizations.id", ondelete="CASCADE"))
    customer_id: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(40))
    plan: Mapped[str | None] = mapped_column(String(20))
    last_event_created: Mapped[datetime] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS, server_default=func.now())
