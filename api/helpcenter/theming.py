"""The help center's logo (issue 32), domain half (no Quart): uploaded as the raw body of
``PUT /api/v1/{org}/settings/help-center/logo`` (admin), at most ``MAX_LOGO_BYTES``, a PNG,
JPEG, WebP or GIF whose bytes are what its ``Content-Type`` says (``sniff``: no SVG, which
could carry script), kept in the org's schema (``help_center_logo``, one row) and named in
``organizations.help_center.logo`` by its digest, so its URL (``/hc/{org}/logo/{digest}.png``)
changes with it and is cached for ever. Deleting it goes back to the title alone."""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import (
    Column,
    DateTime,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    delete,
    select,
)
from sqlalchemy import update as sql_update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import ValidationFailed, field_error
from api.settings import help_center
from tenancy.audit import audit_settings
from tenancy.clock import utcnow
from tenancy.db import TENANT_SCHEMA_PLACEHOLDER
from tenancy.generations import note_write
from tenancy.keys import notify_tenancy_changed
from tenancy.models import Organization
from tenancy.principal import Principal

MAX_LOGO_BYTES = 256 * 1024  # the table's check constraint holds the same bound
FIELD = "logo"

# Tenant revision 0014, for statements only (as ``api.helpcenter.visitors``' tables).
logos = Table(
    "help_center_logo",
    MetaData(schema=TENANT_SCHEMA_PLACEHOLDER),
    Column("id", SmallInteger, primary_key=True),
    Column("content_type", String(32), nullable=False),
    Column("digest", String(64), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


def sniff(data: bytes) -> str | None:
    """The image type the bytes start with (PNG, JPEG, GIF or WebP), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def checked(declared: str | None, data: bytes) -> str:
    """The logo's type: the declared ``Content-Type`` when the bytes are of that type; else
    ``ValidationFailed`` (the size is bounded before the body is read)."""
    mimetype = (declared or "").split(";")[0].strip().lower()
    if mimetype not in help_center.LOGO_TYPES:
        allowed = ", ".join(help_center.LOGO_TYPES)
        raise ValidationFailed(
            f"A logo is one of {allowed}.", details=field_error("Content-Type", f"one of {allowed}")
        )
    if not data:
        raise ValidationFailed("The logo is empty.", details=field_error(FIELD, "empty"))
    if sniff(data) != mimetype:
        raise ValidationFailed(
            f"The body is not a {mimetype} image.",
            details=field_error(FIELD, f"not a {mimetype} image"),
        )
    return mimetype


async def _set_logo(
    session: AsyncSession, org: Principal, logo: dict[str, str] | None
) -> dict[str, Any]:
    row = (
        await session.execute(
            select(Organization.name, Organization.help_center)
            .where(Organization.id == org.id)
            .with_for_update(key_share=True)  # as the settings' PATCH (api.settings.service)
        )
    ).one()
    stored = {k: v for k, v in (row.help_center or {}).items() if k != help_center.LOGO}
    if logo is not None:
        stored[help_center.LOGO] = logo
    before = help_center.public(row.help_center, row.name, org.slug)
    after = help_center.public(stored, row.name, org.slug)
    if stored != row.help_center:
        await session.execute(
            sql_update(Organization).where(Organization.id == org.id).values(help_center=stored)
        )
        await audit_settings(
            session,
            org.id,
            org.actor,
            {help_center.FIELD: {"logoUrl": before["logoUrl"]}},
            {help_center.FIELD: {"logoUrl": after["logoUrl"]}},
        )
        await notify_tenancy_changed(session, org.id)
        note_write(session.info, None)  # cached pages show the logo's URL
    return after


async def save_logo(
    session: AsyncSession, org: Principal, declared: str | None, data: bytes
) -> dict[str, Any]:
    """Store the logo (replacing any) and name it in the settings; returns the help center's
    public settings."""
    mimetype = checked(declared, data)
    digest = hashlib.sha256(data).hexdigest()[:32]
    values = {"content_type": mimetype, "digest": digest, "data": data, "updated_at": utcnow()}
    stmt = insert(logos).values(id=1, **values)
    await session.execute(stmt.on_conflict_do_update(index_elements=[logos.c.id], set_=values))
    return await _set_logo(session, org, {"digest": digest, "type": mimetype})


async def delete_logo(session: AsyncSession, org: Principal) -> dict[str, Any]:
    await session.execute(delete(logos))
    return await _set_logo(session, org, None)


async def read_logo(session: AsyncSession, digest: str) -> tuple[str, bytes] | None:
    """The logo's type and bytes when its digest is ``digest`` (an older one: None)."""
    row = (
        await session.execute(
            select(logos.c.content_type, logos.c.data).where(
                logos.c.id == 1, logos.c.digest == digest
            )
        )
    ).first()
    return (row.content_type, bytes(row.data)) if row is not None else None
