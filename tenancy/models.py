"""Shared tables (schema ``shared``): organizations and their API keys."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, ForeignKey, String, func
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import SharedBase


class Organization(SharedBase):
    __tablename__ = "organizations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    slug: Mapped[str] = mapped_column(String(63), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    plan: Mapped[str] = mapped_column(String(20))
    schema_name: Mapped[str] = mapped_column(String(63), unique=True)
    # The tenant migration head this org's schema is at: `faq migrate` reads it in one query.
    schema_revision: Mapped[str | None] = mapped_column(String(64))
    stripe_customer_id: Mapped[str | None] = mapped_column(String(255), unique=True)
    # BCP 47 tags in canonical case; the default is one of ``locales`` (issue 15).
    default_locale: Mapped[str] = mapped_column(String(35), server_default="en")
    locales: Mapped[list[str]] = mapped_column(ARRAY(String(35)), server_default="{en}")
    # The hosted help center (issue 16): {"enabled", "title", "primaryColor"}; off by default.
    help_center: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default='{"enabled": false}')
    # How the org's application signs its readers' tokens (issue 39; ``tenancy.readers``).
    readers: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default="{}")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ApiKey(SharedBase):
    __tablename__ = "api_keys"

    fingerprint: Mapped[str] = mapped_column(String(16), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    org_id: Mapped[str] = mapped_column(ForeignKey("shared.organizations.id", ondelete="CASCADE"))
    scopes: Mapped[list[str]] = mapped_column(ARRAY(String(10)))
    revoked: Mapped[bool] = mapped_column(Boolean, default=False, server_default="false")
    # Keys managed by API (issue 16): allowed origins drive CORS for ``public`` keys only.
    name: Mapped[str] = mapped_column(String(200), default="", server_default="")
    allowed_origins: Mapped[list[str]] = mapped_column(
        ARRAY(String(255)), default=list, server_default="{}"
    )
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # The member the key belongs to (issue 30; ``members`` is in the org's schema).
    member_id: Mapped[str | None] = mapped_column(String(40))
