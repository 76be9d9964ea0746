"""Slugs: ``^[a-z0-9]+(?:-[a-z0-9]+)*$``, auto-made from text with accents folded."""

from __future__ import annotations

import re

from anyascii import anyascii
from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
RESERVED = frozenset({"merge", "reorder", "audit"})
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def slugify(text: str, max_length: int) -> str:
    """Lower-case, accents folded to ASCII, other runs of characters become ``-``."""
    slug = _NON_ALNUM.sub("-", anyascii(text).lower()).strip("-")
    slug = slug[:max_length].rstrip("-")
    return slug or "item"


def with_suffix(base: str, n: int, max_length: int) -> str:
    """``base`` for n=1, else ``base-n``, trimmed so the whole fits ``max_length``."""
    if n == 1:
        return base
    suffix = f"-{n}"
    return base[: max_length - len(suffix)].rstrip("-") + suffix


def is_valid_slug(slug: str, max_length: int) -> bool:
    return len(slug) <= max_length and SLUG_RE.fullmatch(slug) is not None


async def next_free_slug(
    session: AsyncSession,
    slug_column: InstrumentedAttribute[str],
    live: ColumnElement[bool],
    base: str,
    max_length: int,
) -> str:
    """The first of ``base``, ``base-2``, ``base-3``… not taken by a live row (nor reserved)."""
    pattern = base.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "-%"
    taken = set(
        (
            await session.execute(
                select(slug_column).where(live, or_(slug_column == base, slug_column.like(pattern)))
            )
        ).scalars()
    )
    n = 1
    while True:
        candidate = with_suffix(base, n, max_length)
        if candidate not in taken and candidate not in RESERVED:
            return candidate
        n += 1


def is_unique_violation(error: IntegrityError, index_name: str) -> bool:
    return index_name in str(error.orig)
