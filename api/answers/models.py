"""Tenant tables of answers: the org's synonym groups per locale, with the support lexicon's
groups it switched off (the embeddings' table is in ``api.answers.vectors``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase
from tenancy.generations import versioned


class SynonymSet(TenantBase):
    __tablename__ = "synonyms"
    __table_args__ = versioned()  # a change re-ranks answers: cached reads start over

    locale: Mapped[str] = mapped_column(String(35), primary_key=True)
    groups: Mapped[list[list[str]]] = mapped_column(JSONB)
    # The support lexicon's groups (``api.answers.lexicon``) switched off in this locale.
    lexicon_off: Mapped[list[str]] = mapped_column(JSONB, server_default=text("'[]'::jsonb"))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
