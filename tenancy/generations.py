"""A content generation per org in Redis: a number that changes after every committed write
to the org's versioned tables, in whatever process wrote (API request, worker, CLI).

A table opts in with ``__table_args__ = versioned()``. Every tenant transaction that writes
such a table (any statement through a tenant session, or an ORM flush of it; text SQL counts
as a write, since its table is unknown) bumps the org's generation (``INCR faq:gen:<schema>``)
right after its commit (``tenancy/db.py`` calls ``note_write`` and ``bump``). Readers that
cache what those tables hold (``api/response_cache.py``) key their entries on the generation.

Redis unreachable: the bump is lost (other processes' entries live until their TTL) and this
process drops its own cached entries (``on_bump_failed``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import structlog
from sqlalchemy import Table

from tenancy.redis import loop_client
from tenancy.settings import get_settings

log = structlog.get_logger(__name__)

VERSIONED = "versioned"  # the Table.info flag
WROTE_KEY = "tenant_wrote_versioned_tables"  # the Session.info flag


def versioned() -> dict[str, Any]:
    """``__table_args__`` of a table whose writes change the org's generation."""
    return {"info": {VERSIONED: True}}


def generation_key(schema: str) -> str:
    return f"faq:gen:{schema}"


def note_write(info: dict[str, Any], table: Table | Any | None) -> None:
    """Called by ``tenancy.db`` for each write of a tenant session (None: unknown table)."""
    if table is None or getattr(table, "info", {}).get(VERSIONED):
        info[WROTE_KEY] = True


_bump_failed: list[Callable[[], None]] = []


def on_bump_failed(callback: Callable[[], None]) -> None:
    """Run ``callback`` in this process when a bump could not reach Redis."""
    _bump_failed.append(callback)


async def bump(schema: str) -> None:
    if not get_settings().redis_url:
        return
    try:
        await loop_client().incr(generation_key(schema))
    except Exception:  # Redis down: other processes' entries live until their TTL
        log.warning("generation_bump_failed", exc_info=True)
        for callback in _bump_failed:
            callback()


async def initial_generation(schema: str) -> bytes | None:
    """An org seen for the first time (or after Redis lost its keys): a random start, so no
    entry cached under an earlier generation can match again."""
    if not get_settings().redis_url:
        return None
    key = generation_key(schema)
    try:
        client = loop_client()
        await client.set(key, str(random.getrandbits(62)), nx=True)
        value = await client.get(key)
        return value if isinstance(value, bytes) else None
    except Exception:
        return None
