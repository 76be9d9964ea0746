"""Time: timezone-aware UTC, and the contract's wire format (milliseconds and ``Z``)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None or value.utcoffset():  # asyncpg returns UTC: convert only others
        value = value.astimezone(UTC)
    # isoformat is C code, several times faster than strftime (it runs 60 times per list page).
    return value.isoformat(timespec="milliseconds")[:23] + "Z"
