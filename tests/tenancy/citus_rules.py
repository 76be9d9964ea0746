"""What Citus refuses in a write on a distributed or a reference table, checked on PostgreSQL's
own parse tree of each statement (``debug_print_parse``) against ``pg_proc.provolatile``:

- ``column``: a STABLE or VOLATILE function (or the input function of an I/O cast, such as
  ``CAST(text AS timestamptz)``) taking a column value in an UPDATE or DELETE ("STABLE
  functions used in UPDATE queries cannot be called with column references");
- ``case``: any non-IMMUTABLE function (``now()``, ``CURRENT_TIMESTAMP``, a STABLE cast)
  inside a CASE or COALESCE of an INSERT, UPDATE or DELETE ("non-IMMUTABLE functions are not
  allowed in CASE or COALESCE statements");
- ``on_conflict``: any non-IMMUTABLE function in ``ON CONFLICT DO UPDATE SET`` ("functions
  used in the DO UPDATE SET clause of INSERTs on distributed tables must be marked
  IMMUTABLE").

``refusals`` takes the statements as sent and returns each offender with its reasons (a
statement that does not parse in the schema given is an offender too: ``unchecked``).
"""

from __future__ import annotations

import re
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine

# A function call, or an operator (its function), in ``nodeToString`` form.
_FUNCTION_NODE = re.compile(
    r"\{(?:FUNCEXPR\s+:funcid|(?:OPEXPR|DISTINCTEXPR|NULLIFEXPR|SCALARARRAYOPEXPR)"
    r"\s+:opno\s+\d+\s+:opfuncid)\s+(\d+)"
)
_IO_CAST = re.compile(r"\{COERCEVIAIO\s+:arg\s+")
_RESULT_TYPE = re.compile(r":resulttype\s+(\d+)")
_CASE_OR_COALESCE = re.compile(r"\{(?:CASEEXPR|COALESCEEXPR)\s")
_ON_CONFLICT_SET = re.compile(r":onConflictSet\s+")
_WRITE = re.compile(r"\s*(WITH\b.*?\)\s*)?(INSERT|UPDATE|DELETE)\b", re.S | re.I)
_UPDATE_OR_DELETE = re.compile(r"\s*(WITH\b.*?\)\s*)?(UPDATE|DELETE)\b", re.S | re.I)


def is_write(statement: str) -> bool:
    return _WRITE.match(statement) is not None


def node_end(tree: str, start: int) -> int:
    """The index just past the ``{...}`` (or ``(...)``) node opening at ``start``."""
    opening = tree[start]
    closing = "}" if opening == "{" else ")"
    depth, i = 0, start
    while i < len(tree):
        ch = tree[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            i = tree.index('"', i + 1) + 1
            continue
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced parse tree")


def _calls(tree: str, *, with_column: bool) -> tuple[set[int], set[int], bool]:
    """(function OIDs, I/O cast result types, has an SQL value function) in ``tree``; with
    ``with_column`` only calls whose arguments hold a column."""
    functions, casts = set(), set()
    for match in _FUNCTION_NODE.finditer(tree):
        node = tree[match.start() : node_end(tree, match.start())]
        if not with_column or "{VAR " in node:
            functions.add(int(match.group(1)))
    for match in _IO_CAST.finditer(tree):
        arg_end = node_end(tree, match.end())
        if not with_column or "{VAR " in tree[match.end() : arg_end]:
            found = _RESULT_TYPE.search(tree, arg_end)
            assert found is not None
            casts.add(int(found.group(1)))
    # CURRENT_TIMESTAMP, CURRENT_DATE, LOCALTIME…: never IMMUTABLE.
    value_functions = not with_column and "{SQLVALUEFUNCTION " in tree
    return functions, casts, value_functions


def _parts(tree: str, pattern: re.Pattern[str]) -> list[str]:
    return [tree[m.start() : node_end(tree, m.start())] for m in pattern.finditer(tree)]


def _on_conflict_set(tree: str) -> list[str]:
    found = []
    for match in _ON_CONFLICT_SET.finditer(tree):
        if tree[match.end()] in "({":
            found.append(tree[match.end() : node_end(tree, match.end())])
    return found


async def _mutable(raw: Any, functions: set[int], casts: set[int]) -> list[str]:
    if not functions and not casts:
        return []
    rows = await raw.fetch(
        "SELECT p.oid::regprocedure::text AS f FROM pg_proc p "
        "WHERE (p.oid = any($1::oid[]) OR p.oid IN "
        "(SELECT typinput FROM pg_type WHERE oid = any($2::oid[]))) "
        "AND p.provolatile <> 'i' ORDER BY 1",
        sorted(functions),
        sorted(casts),
    )
    return [row["f"] for row in rows]


async def refusals(
    engine: AsyncEngine, schema: str, statements: list[str]
) -> dict[str, dict[str, list[str]]]:
    """Each write among ``statements`` that Citus would refuse: {statement[:200]: {rule:
    [functions]}}. Unqualified names resolve in ``schema``."""
    offenders: dict[str, dict[str, list[str]]] = {}
    async with engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None
        trees: list[str] = []
        # The dump is wrapped at 80 columns: white space folded, so ``{VAR `` is one token.
        raw.add_log_listener(lambda _c, m: trees.append(" ".join(str(m.detail or "").split())))
        async with raw.transaction():
            await raw.execute(f'SET LOCAL search_path TO "{schema}"')
            await raw.execute("SET LOCAL client_min_messages TO log")
            await raw.execute("SET LOCAL debug_pretty_print TO off")
            await raw.execute("SET LOCAL debug_print_parse TO on")
            for statement in sorted(set(filter(is_write, statements))):
                trees.clear()
                try:
                    async with raw.transaction():  # a savepoint: the next one still runs
                        await raw.prepare(statement)
                except asyncpg.PostgresError as error:  # not checked is not passed
                    offenders[statement[:200]] = {"unchecked": [str(error)]}
                    continue
                tree = " ".join(trees)
                found: dict[str, list[str]] = {}
                if _UPDATE_OR_DELETE.match(statement):
                    functions, casts, _ = _calls(tree, with_column=True)
                    if bad := await _mutable(raw, functions, casts):
                        found["column"] = bad
                for rule, parts in (
                    ("case", _parts(tree, _CASE_OR_COALESCE)),
                    ("on_conflict", _on_conflict_set(tree)),
                ):
                    bad = []
                    for part in parts:
                        functions, casts, value_function = _calls(part, with_column=False)
                        bad += await _mutable(raw, functions, casts)
                        bad += ["SQL value function (CURRENT_TIMESTAMP…)"] if value_function else []
                    if bad:
                        found[rule] = sorted(set(bad))
                if found:
                    offenders[statement[:200]] = found
        await conn.rollback()
    return offenders
