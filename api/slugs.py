"""Slugs: ``^[a-z0-9]+(?:-[a-z0-9]+)*$``, auto-made from text with accents folded."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from anyascii import anyascii
from sqlalchemy import ColumnElement, Row, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import SlugConflict, ValidationFailed, field_error

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
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


@dataclass(frozen=True)
class SlugRule:
    """How one resource's slugs work: its table, which rows are live, the maximum length, the
    reserved words and the partial unique index that enforces uniqueness among live rows."""

    model: type[Any]
    live: ColumnElement[bool]
    max_length: int
    reserved: frozenset[str]
    index_name: str

    @property
    def column(self) -> Any:
        """The model's ``slug`` column."""
        return self.model.slug

    def check_manual(self, slug: str) -> None:
        """A slug the client chose: reserved words and bad shapes are ``validation_failed``."""
        if slug in self.reserved:
            raise ValidationFailed(
                f"{slug!r} is an operation, not a slug.",
                details=field_error("slug", "reserved word"),
            )
        if not is_valid_slug(slug, self.max_length):
            raise ValidationFailed(
                "The slug is not valid.",
                details=field_error(
                    "slug", f"must match ^[a-z0-9]+(?:-[a-z0-9]+)*$, at most {self.max_length}"
                ),
            )

    def base_and_pattern(self, text: str) -> tuple[str, str]:
        """``text``'s base slug and the LIKE pattern of its suffixed forms."""
        base = slugify(text, self.max_length)
        return base, base.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "-%"

    def taken(self, text: str) -> Any:
        """The statement of the live slugs equal to ``text``'s base slug or a suffixed form."""
        base, pattern = self.base_and_pattern(text)
        column = self.column
        return select(column).where(self.live, or_(column == base, column.like(pattern)))

    def first_free(self, text: str, taken: set[str]) -> str:
        """The first of ``base``, ``base-2``, ``base-3``… not in ``taken`` nor reserved."""
        base = slugify(text, self.max_length)
        n = 1
        while True:
            candidate = with_suffix(base, n, self.max_length)
            if candidate not in taken and candidate not in self.reserved:
                return candidate
            n += 1

    async def next_free(self, session: AsyncSession, text: str) -> str:
        """The first free slug of ``text`` among the live rows now."""
        return self.first_free(text, set((await session.execute(self.taken(text))).scalars()))

    async def insert(
        self,
        session: AsyncSession,
        values: dict[str, Any],
        *,
        manual_slug: str | None,
        text: str,
        returning: tuple[Any, ...] = (),
    ) -> Row[Any]:
        """Insert a row, with the manual slug (409 if taken) or the first free auto slug,
        re-picked when a concurrent create took it first; returns the ``returning`` columns
        (default: the id). One statement per try: ``ON CONFLICT`` on the live-slug index skips
        the row instead of failing the transaction (no savepoint)."""
        table = self.model.__table__
        stmt = (
            pg_insert(table)
            .on_conflict_do_nothing(index_elements=[table.c.slug], index_where=self.live)
            .returning(*(returning or (table.c.id,)))
        )
        for _ in range(20):
            if manual_slug is None:
                values["slug"] = await self.next_free(session, text)
            row = (await session.execute(stmt.values(**values))).first()
            if row is not None:
                return row
            if manual_slug is not None:
                raise SlugConflict()
        raise SlugConflict("Could not allocate a free slug; retry.")

    def is_conflict(self, error: IntegrityError) -> bool:
        return self.index_name in str(error.orig)
