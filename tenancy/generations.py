"""Content generations per org in Redis: numbers that change after every committed write to
the org's versioned tables, in whatever process wrote (API request, worker, CLI).

Two generations per org (issue 14):

- ``lists`` (``faq:gen:<schema>``): bumped by every write of a versioned table. Lists,
  searches and category reads key on it (a category's ``questionCount`` changes with a create).
- ``items`` (``faq:gen:<schema>:items``): what cached single reads of questions key on. Bumped
  by every versioned write except plain INSERTs into a table declared
  ``versioned(insert_keeps_items=True)`` (questions): a new row cannot be in any cached single
  read, since only 200 bodies are cached. An INSERT ... ON CONFLICT DO UPDATE, an UPDATE, a
  DELETE, a flush of a changed or deleted row, a write of any other versioned table (question
  translations change what a single read serves in a locale) and text SQL (its table is
  unknown) bump both. Text SQL that only takes a lock or notifies (``SELECT
  pg_advisory_xact_lock(...)``, ``SELECT pg_notify(...)``, ``LOCK TABLE outbox IN SHARE
  MODE``) writes nothing.

A table opts in with ``__table_args__ = versioned()``. Every tenant transaction that writes
such a table (any statement through a tenant session, or an ORM flush of it) bumps the org's
generations it changed (both INCRs in one round trip) right after its commit (``tenancy/db.py``
calls ``note_write`` and ``bump``). Readers that cache what those tables hold
(``api/http/response_cache.py``) key their entries on a generation.

Redis unreachable: the bump is lost (other processes' entries live until their TTL) and this
process drops its own cached entries (``on_bump_failed``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

import structlog
from sqlalchemy import Insert, MetaData, Table, TextClause, event
from sqlalchemy.dialects.postgresql.dml import OnConflictDoNothing

from tenancy.redis import loop_client
from tenancy.settings import get_settings

log = structlog.get_logger(__name__)

VERSIONED = "versioned"  # the Table.info flag
INSERT_KEEPS_ITEMS = "versioned_insert_keeps_items"  # the Table.info flag of the rule below
WROTE_KEY = "tenant_wrote_versioned_tables"  # the Session.info entry: the kinds to bump

LISTS = "lists"  # lists, searches, category reads
ITEMS = "items"  # single reads of questions
ALL_KINDS = (LISTS, ITEMS)

# What a write statement is, for ``note_write``.
INSERT = "insert"  # new rows only (a plain INSERT, or ON CONFLICT DO NOTHING)
CHANGE = "change"  # anything else (UPDATE, DELETE, upsert, text SQL)
NO_WRITE = "none"  # text SQL that only calls functions that write no table (a lock, a notify)

# Text SQL is a write of an unknown table, except a SELECT that calls only these functions.
_TABLELESS_FUNCTIONS = frozenset(
    {"pg_advisory_xact_lock", "pg_try_advisory_xact_lock", "hashtextextended", "pg_notify"}
)
_SELECT_CALL = re.compile(r"\s*select\s+\w+\s*\(", re.IGNORECASE)
# ``LOCK [TABLE] name[, ...] [IN ... MODE] [NOWAIT]``: takes a lock, writes nothing (the relay
# locks the outbox before it clears the org's pending mark).
_LOCK = re.compile(
    r"\s*lock\s+(table\s+)?[\w.\", ]+(\s+in\s+[\w ]+\s+mode)?(\s+nowait)?\s*;?\s*", re.I
)
_CALLED = re.compile(r"(\w+)\s*\(")


def versioned(*, insert_keeps_items: bool = False) -> dict[str, Any]:
    """``__table_args__`` of a table whose writes change the org's generations.

    ``insert_keeps_items``: inserting rows bumps only ``lists`` (a new row is in no cached
    single read); true only of tables whose rows are single reads and nothing else cached."""
    return {"info": {VERSIONED: True, INSERT_KEEPS_ITEMS: insert_keeps_items}}


def generation_key(schema: str, kind: str = LISTS) -> str:
    return f"faq:gen:{schema}" if kind == LISTS else f"faq:gen:{schema}:{kind}"


def statement_kind(statement: Any) -> str:
    """``INSERT`` for an INSERT that can only add rows, ``NO_WRITE`` for text SQL that writes
    no versioned table (``_writes_no_table``, ``_writes_only_unversioned``), else ``CHANGE``."""
    if isinstance(statement, Insert):
        on_conflict = getattr(statement, "_post_values_clause", None)
        if on_conflict is None or isinstance(on_conflict, OnConflictDoNothing):
            return INSERT
    if isinstance(statement, TextClause) and (
        _writes_no_table(statement.text) or _writes_only_unversioned(statement.text)
    ):
        return NO_WRITE
    return CHANGE  # UPDATE, DELETE, an upsert, other text SQL (its effect unknown)


# Every table's name, and whether one of that name is versioned: recorded as each table is
# declared (all of them import ``tenancy.db``, which imports this module first).
_DECLARED: dict[str, bool] = {}


@event.listens_for(Table, "after_parent_attach")
def _declared(table: Table, parent: Any) -> None:
    if isinstance(parent, MetaData):
        versioned = bool(table.info.get(VERSIONED))
        _DECLARED[table.name] = _DECLARED.get(table.name, False) or versioned


# One UPDATE, INSERT or DELETE (no WITH: a CTE may write elsewhere) and the table it writes.
_TEXT_WRITE = re.compile(
    r"\s*(?:update|insert\s+into|delete\s+from)\s+(?:only\s+)?"
    r'(?:"?\w+"?\.)?"?(\w+)"?[\s(]',
    re.IGNORECASE,
)


def _writes_only_unversioned(sql: str) -> bool:
    """One write statement of a declared table that is not versioned (``UPDATE deliveries
    ...``: a delivery's bookkeeping changes no content)."""
    found = _TEXT_WRITE.match(sql)
    if found is None or ";" in sql.rstrip().rstrip(";"):
        return False
    return _DECLARED.get(found.group(1)) is False


def _writes_no_table(sql: str) -> bool:
    """``SELECT f(...)`` calling only functions of ``_TABLELESS_FUNCTIONS``, or a ``LOCK``
    (one statement)."""
    if _LOCK.fullmatch(sql) is not None:
        return True
    return (
        _SELECT_CALL.match(sql) is not None
        and ";" not in sql.rstrip().rstrip(";")
        and set(name.lower() for name in _CALLED.findall(sql)) <= _TABLELESS_FUNCTIONS
    )


def note_write(info: dict[str, Any], table: Table | Any | None, kind: str = CHANGE) -> None:
    """Called by ``tenancy.db`` for each write of a tenant session (None: unknown table), with
    what the write did (``statement_kind``, or ``INSERT`` for a flushed new row)."""
    table_info = getattr(table, "info", {}) if table is not None else {}
    if kind == NO_WRITE or (table is not None and not table_info.get(VERSIONED)):
        return
    keeps_items = kind == INSERT and table_info.get(INSERT_KEEPS_ITEMS, False)
    kinds = (LISTS,) if keeps_items else ALL_KINDS
    info[WROTE_KEY] = tuple(k for k in ALL_KINDS if k in kinds or k in info.get(WROTE_KEY, ()))


_bump_failed: list[Callable[[], None]] = []


def on_bump_failed(callback: Callable[[], None]) -> None:
    """Run ``callback`` in this process when a bump could not reach Redis."""
    _bump_failed.append(callback)


async def bump(schema: str, kinds: tuple[str, ...] = ALL_KINDS) -> None:
    """INCR the org's generations of ``kinds``, in one round trip."""
    if not get_settings().redis_url or not kinds:
        return
    try:
        pipe = loop_client().pipeline(transaction=False)
        for kind in kinds:
            pipe.incr(generation_key(schema, kind))
        await pipe.execute()
    except Exception:  # Redis down: other processes' entries live until their TTL
        log.warning("generation_bump_failed", exc_info=True)
        for callback in _bump_failed:
            callback()


async def initial_generation(schema: str, kind: str = LISTS) -> bytes | None:
    """An org seen for the first time (or after Redis lost its keys): a random start, so no
    entry cached under an earlier generation can match again."""
    if not get_settings().redis_url:
        return None
    key = generation_key(schema, kind)
    try:
        client = loop_client()
        await client.set(key, str(random.getrandbits(62)), nx=True)
        value = await client.get(key)
        return value if isinstance(value, bytes) else None
    except Exception:
        return None
