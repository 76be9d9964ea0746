"""Whether semantic search runs here: pgvector installed in the database (shared revision
0009 creates it where the server has it and the role may) and not turned off by
``FAQ_SEMANTIC_SEARCH=false``. Checked once per process and database; when it does not run,
the service ranks lexically only and says so once in the log and in ``GET /readyz``."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.settings import get_settings

_HAS_PGVECTOR = text("SELECT to_regtype('public.vector') IS NOT NULL")


@dataclass(frozen=True)
class SemanticStatus:
    available: bool
    reason: str | None = None  # why not, when not

    def details(self) -> dict[str, object]:
        """For ``GET /readyz``: ``{"available": bool}`` and, when off, ``mode`` and ``reason``."""
        if self.available:
            return {"available": True}
        return {"available": False, "mode": "lexical only", "reason": self.reason}


_known: dict[str, SemanticStatus] = {}


def _key(engine: AsyncEngine) -> str:
    return engine.url.render_as_string(hide_password=True)


def known_status(engine: AsyncEngine) -> SemanticStatus | None:
    """The status found for this engine's database, if it was checked in this process."""
    return _known.get(_key(engine))


async def semantic_status(engine: AsyncEngine) -> SemanticStatus:
    """Checked on first use per database (one query), then remembered; logged once if off."""
    key = _key(engine)
    status = _known.get(key)
    if status is not None:
        return status
    if not get_settings().faq_semantic_search:
        status = SemanticStatus(False, "turned off by FAQ_SEMANTIC_SEARCH=false")
    else:
        async with engine.connect() as conn:
            installed = bool((await conn.execute(_HAS_PGVECTOR)).scalar())
        status = (
            SemanticStatus(True)
            if installed
            else SemanticStatus(False, "the pgvector extension is not installed in the database")
        )
    if _known.setdefault(key, status) is status and not status.available:
        structlog.get_logger(__name__).warning(
            "semantic_search_unavailable", mode="lexical only", reason=status.reason
        )
    return _known[key]


def forget_status() -> None:
    """Check again on next use (after installing pgvector and migrating, in tests)."""
    _known.clear()
