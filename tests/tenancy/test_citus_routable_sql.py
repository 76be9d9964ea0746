"""Citus routes a tenant UPDATE or DELETE to the node holding the org's schema only if no
STABLE or VOLATILE function takes a column value (``STABLE functions used in UPDATE queries
cannot be called with column references``, issue 18). This runs a representative set of the
code's flows (question and category writes, webhook changes, the relay, a delivery's claim,
success, retry, ``Retry-After``, timeout, 410, lost attempt, unclaim, postpone, recover, the
publish sweep, the purges and the re-drive), captures every UPDATE and DELETE sent, and checks
each one's parse tree (PostgreSQL's own, ``debug_print_parse``) against ``pg_proc.provolatile``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, event, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Delivery
from tasks.deliveries import store
from tasks.deliveries.attempts import Outcome
from tasks.deliveries.redrive import redrive_overdue
from tasks.publishing import publish_due_questions
from tasks.purge import purge_deleted, purge_history
from tasks.relay import relay_org
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tenancy.settings import get_settings
from tenancy.transactions import commit
from tests.fixtures.orgs import OrgClient

# A function call, or an operator (its function), in ``nodeToString`` form.
_FUNCTION_NODE = re.compile(
    r"\{(?:FUNCEXPR\s+:funcid|(?:OPEXPR|DISTINCTEXPR|NULLIFEXPR|SCALARARRAYOPEXPR)"
    r"\s+:opno\s+\d+\s+:opfuncid)\s+(\d+)"
)


def _node_end(tree: str, start: int) -> int:
    """The index just past the ``{...}`` node opening at ``start``."""
    depth, i = 0, start
    while i < len(tree):
        ch = tree[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            i = tree.index('"', i + 1) + 1
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced parse tree")


def functions_on_columns(tree: str) -> set[int]:
    """OIDs of the functions (and operators' functions) in ``tree`` with a column in their
    arguments."""
    found = set()
    for match in _FUNCTION_NODE.finditer(tree):
        node = tree[match.start() : _node_end(tree, match.start())]
        if "{VAR " in node:
            found.add(int(match.group(1)))
    return found


def io_casts_of_columns(tree: str) -> set[int]:
    """Result types of the I/O casts (``CAST(text AS timestamptz)``: the type's input
    function runs) in ``tree`` whose argument holds a column."""
    found = set()
    for match in re.finditer(r"\{COERCEVIAIO\s+:arg\s+", tree):
        arg_end = _node_end(tree, match.end())
        if "{VAR " in tree[match.end() : arg_end]:
            found.add(int(re.compile(r":resulttype\s+(\d+)").search(tree, arg_end).group(1)))  # type: ignore[union-attr]
    return found


@pytest.fixture
def sent() -> Iterator[list[str]]:
    statements: list[str] = []

    def on_cursor(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _m: bool) -> None:
        statements.append(statement.replace("__tenant__.", ""))

    event.listen(Engine, "before_cursor_execute", on_cursor)
    try:
        yield statements
    finally:
        event.remove(Engine, "before_cursor_execute", on_cursor)


async def default_category(org: OrgClient) -> str:
    r = await org.get("/categories", query={"limit": 100})
    assert r.status_code == 200
    return str(next(c["id"] for c in (await r.get_json())["data"] if c["isDefault"]))


async def create(org: OrgClient, category_id: str | None = None, **fields: Any) -> dict[str, Any]:
    body = {
        "title": "How do I reset my password?",
        "answer": "Use the link on the sign-in page.",
        "categoryId": category_id or await default_category(org),
        "status": "draft",
        **fields,
    }
    r = await org.post("/questions", json=body, scope="write")
    assert r.status_code == 201, await r.get_json()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


def _failed(status: int | None, *, retry_after: str | None = None, error: str | None = None) -> Any:
    return Outcome(utcnow(), status, 12, error, None, retry_after, {})


async def _make_due(engine: AsyncEngine, schema: str, *, pending: bool = False) -> None:
    """Test set-up (not the code under test): every delivery of the org due now."""
    status = ", status = 'pending'" if pending else ""
    async with engine.begin() as conn:
        await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
        await conn.execute(
            text(f"UPDATE deliveries SET next_attempt_at = :due{status}"),
            {"due": utcnow() - timedelta(seconds=1)},
        )


async def _delivery_flows(engine: AsyncEngine, org: OrgClient, webhook_id: str) -> None:
    schema, settings = org.info.schema_name, get_settings()

    async def ids() -> list[str]:
        async with tenant_session(engine, schema) as session:
            rows = await session.execute(
                select(Delivery.id).where(Delivery.webhook_id == webhook_id).order_by(Delivery.id)
            )
            return list(rows.scalars())

    delivery_ids = await ids()
    assert len(delivery_ids) >= 4, delivery_ids
    outcomes = [
        _failed(500),
        _failed(503, retry_after="2"),
        _failed(None, error="timeout"),
        _failed(200),
    ]
    for round_ in range(2):
        await _make_due(engine, schema)
        async with tenant_session(engine, schema) as session:
            claims = await store.claim_wave(session, org.info.id, delivery_ids, settings)
            assert claims, f"round {round_}: nothing claimed"
            done = [(c, outcomes[i % len(outcomes)]) for i, c in enumerate(claims)]
            await store.record_wave(session, done, settings)
            await commit(session)
    # A lost attempt (claimed, never recorded), then the careful claim writes it down.
    await _make_due(engine, schema, pending=True)
    async with tenant_session(engine, schema) as session:
        claims = await store.claim_wave(session, org.info.id, delivery_ids, settings)
        await commit(session)
    await _make_due(engine, schema)
    async with tenant_session(engine, schema) as session:
        claim = await store.claim_one(session, org.info.id, delivery_ids[0], settings)
        assert claim is not None
        await store.unclaim(session, [claim])
        await store.postpone_due(session, delivery_ids, 5)
        await store.record_wave(session, [(claim, _failed(410))], settings)
        await commit(session)


async def test_no_unroutable_function_in_tenant_updates_and_deletes(
    engine: AsyncEngine, org: OrgClient, sent: list[str]
) -> None:
    category = (await org.post("/categories", json={"name": "Billing"}, scope="write")).json
    category = (await category)["data"]
    r = await org.post(
        "/webhooks", json={"url": "https://127.0.0.1:9/hook", "events": ["question.created"]}
    )
    assert r.status_code == 201, await r.get_data()
    webhook_id = (await r.get_json())["data"]["id"]
    questions = [await create(org, title=f"Question {i}?") for i in range(5)]
    await org.patch(f"/categories/{category['id']}", json={"name": "Billing 2"}, scope="write")
    await org.patch(f"/questions/{questions[0]['id']}", json={"title": "Changed?"}, scope="write")
    await org.delete(f"/questions/{questions[1]['id']}", scope="write")
    soon = (utcnow() + timedelta(seconds=1)).isoformat()
    scheduled = await create(org, category_id=await default_category(org))
    await org.patch(
        f"/questions/{scheduled['id']}",
        json={"status": "scheduled", "scheduledPublishAt": soon},
        scope="write",
    )
    await relay_org(engine, org.info.id)
    await _delivery_flows(engine, org, webhook_id)
    r = await org.post(
        f"/webhooks/{webhook_id}/recover",
        json={"since": (utcnow() - timedelta(hours=1)).isoformat()},
    )
    assert r.status_code == 202, await r.get_data()
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE shared.publish_schedule SET next_due_at = now() WHERE org_id = :o"),
            {"o": org.info.id},
        )
    await publish_due_questions(engine)
    await purge_deleted(engine)
    await purge_history(engine)
    await redrive_overdue(engine)
    await org.delete(f"/webhooks/{webhook_id}")
    await org.delete(f"/categories/{category['id']}", scope="write")

    writes = sorted(
        {s for s in sent if re.match(r"\s*(WITH\b.*?\)\s*)?(UPDATE|DELETE)\b", s, re.S | re.I)}
    )
    assert any("deliveries" in s for s in writes) and any("questions" in s for s in writes)
    offenders = await _unroutable(engine, org.info.schema_name, writes)
    assert offenders == {}, offenders


async def _unroutable(engine: AsyncEngine, schema: str, statements: list[str]) -> dict[str, Any]:
    """Each statement with a non-IMMUTABLE function on a column: the functions' names."""
    offenders: dict[str, Any] = {}
    async with engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        assert raw is not None
        trees: list[str] = []
        raw.add_log_listener(lambda _c, message: trees.append(str(message.detail or "")))
        async with raw.transaction():
            await raw.execute(f'SET LOCAL search_path TO "{schema}"')
            await raw.execute("SET LOCAL client_min_messages TO log")
            await raw.execute("SET LOCAL debug_pretty_print TO off")
            await raw.execute("SET LOCAL debug_print_parse TO on")
            for statement in statements:
                trees.clear()
                await raw.prepare(statement)
                oids = set().union(*(functions_on_columns(t) for t in trees))
                casts = set().union(*(io_casts_of_columns(t) for t in trees))
                if not oids and not casts:
                    continue
                bad = await raw.fetch(
                    "SELECT p.oid::regprocedure::text AS f FROM pg_proc p "
                    "WHERE (p.oid = any($1::oid[]) OR p.oid IN "
                    "(SELECT typinput FROM pg_type WHERE oid = any($2::oid[]))) "
                    "AND p.provolatile <> 'i'",
                    sorted(oids),
                    sorted(casts),
                )
                if bad:
                    offenders[statement[:160]] = [row["f"] for row in bad]
        await conn.rollback()
    return offenders


async def test_the_check_finds_what_citus_refuses(engine: AsyncEngine, org: OrgClient) -> None:
    """The check itself: STABLE calls and I/O casts on columns are found, constants are not."""
    refused = [
        "UPDATE deliveries SET attempts = attempts || jsonb_build_array(event)",
        "UPDATE deliveries SET sent_at = CAST(data ->> 'timestamp' AS timestamptz)",
        "DELETE FROM deliveries WHERE created_at + interval '1 day' < $1",
    ]
    allowed = [
        "UPDATE deliveries SET updated_at = now(), attempts = attempts || $1::jsonb",
        "DELETE FROM deliveries WHERE created_at < now() - interval '1 day'",
        "UPDATE webhooks SET delivery_count = delivery_count + 1 WHERE id = $1",
    ]
    found = await _unroutable(engine, org.info.schema_name, refused + allowed)
    assert sorted(found) == sorted(refused), found
    assert found[refused[0]] == ['jsonb_build_array("any")']
    assert found[refused[1]] == ["timestamptz_in(cstring,oid,integer)"]
    assert found[refused[2]] == ["timestamptz_pl_interval(timestamp with time zone,interval)"]
