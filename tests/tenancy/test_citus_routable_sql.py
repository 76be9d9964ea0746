"""Citus refuses some writes on distributed and reference tables (``tests/tenancy/citus_rules.py``:
a STABLE function on a column in an UPDATE or DELETE, issue 18; any non-IMMUTABLE function in a
CASE or COALESCE, or in ON CONFLICT DO UPDATE SET, issue 27). This runs a representative set of
the code's flows (question and category writes, webhook changes, the relay, a delivery's claim,
success, retry, ``Retry-After``, timeout, 410, lost attempt, unclaim, postpone, recover, the
publish sweep, the purges and the re-drive, key revocation, help-center votes and views, the
analytics and audit jobs), captures every INSERT, UPDATE and DELETE sent, and checks each one's
parse tree (PostgreSQL's own, ``debug_print_parse``) against ``pg_proc.provolatile``.
Provisioning and ``faq migrate`` are checked the same way in ``test_citus_statements.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, event, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter.visitors import record_views, record_vote, view_member
from api.webhooks.models import Delivery
from tasks.analytics import collect
from tasks.deliveries import store
from tasks.deliveries.attempts import Outcome
from tasks.deliveries.redrive import redrive_overdue
from tasks.help_center import aggregate_views
from tasks.publishing import publish_due_questions
from tasks.purge import purge_deleted, purge_history
from tasks.relay import relay_org
from tenancy.audit import system_actor
from tenancy.clock import utcnow
from tenancy.db import shared_session, tenant_session
from tenancy.keys import create_key, revoke_key
from tenancy.redis import loop_client
from tenancy.settings import get_settings
from tenancy.transactions import commit
from tests.fixtures.orgs import OrgClient
from tests.tenancy.citus_rules import is_write, refusals

pytestmark = pytest.mark.slow


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

    await _key_vote_and_job_flows(engine, org)

    writes = sorted(filter(is_write, sent))
    for table in ("deliveries", "questions", "api_keys", "question_votes", "audit_entries"):
        assert any(table in s for s in writes), table
    offenders = await refusals(engine, org.info.schema_name, writes)
    assert offenders == {}, offenders


async def _key_vote_and_job_flows(engine: AsyncEngine, org: OrgClient) -> None:
    """Revocation (``faq keys revoke``: shared.api_keys is a reference table on Citus), a
    help-center vote and a changed vote (ON CONFLICT DO UPDATE), and the daily jobs."""
    async with shared_session(engine) as session:
        record = await create_key(session, org.info.id, ["read"])
        await commit(session)
    async with tenant_session(engine, org.info.schema_name) as session:
        assert await revoke_key(session, record.fingerprint, actor=system_actor("cli"))
        assert await revoke_key(session, record.fingerprint, actor=system_actor("cli"))
        await commit(session)
    question = await create(org, title="Voted on?", status="published")
    async with tenant_session(engine, org.info.schema_name) as session:
        for helpful in (True, False):
            await record_vote(
                session,
                question_id=question["id"],
                visitor="v" * 64,
                helpful=helpful,
                reason="unclear",
                locale="en",
            )
        await commit(session)
    today = utcnow().date()
    member = view_member(question["id"], "v" * 64)
    await record_views(loop_client(), org.info.id, today, {member: "a" * 16})
    await aggregate_views(engine, today)
    await relay_org(engine, org.info.id)
    await collect(engine, today)


async def test_the_check_finds_what_citus_refuses(engine: AsyncEngine, org: OrgClient) -> None:
    """The check itself: STABLE calls and I/O casts on columns, any non-IMMUTABLE call in a
    CASE or COALESCE, and in ON CONFLICT DO UPDATE SET are found; constants elsewhere are
    not."""
    refused = {
        "UPDATE deliveries SET attempts = attempts || jsonb_build_array(event)": {
            "column": ['jsonb_build_array("any")']
        },
        "UPDATE deliveries SET sent_at = CAST(data ->> 'timestamp' AS timestamptz)": {
            "column": ["timestamptz_in(cstring,oid,integer)"]
        },
        "DELETE FROM deliveries WHERE created_at + interval '1 day' < $1": {
            "column": ["timestamptz_pl_interval(timestamp with time zone,interval)"]
        },
        "UPDATE deliveries SET sent_at = COALESCE(CAST(data ->> 'timestamp' AS timestamptz), "
        "created_at)": {
            "column": ["timestamptz_in(cstring,oid,integer)"],
            "case": ["timestamptz_in(cstring,oid,integer)"],
        },
        "UPDATE shared.api_keys SET revoked_at = coalesce(revoked_at, now())": {"case": ["now()"]},
        "UPDATE deliveries SET status = CASE WHEN $1 THEN 'failed' ELSE status END, "
        "updated_at = CASE WHEN $1 THEN CURRENT_TIMESTAMP ELSE updated_at END": {
            "case": ["SQL value function (CURRENT_TIMESTAMP…)"]
        },
        "INSERT INTO question_votes (question_id, visitor, helpful, locale) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (question_id, visitor) DO UPDATE "
        "SET helpful = excluded.helpful, created_at = now()": {"on_conflict": ["now()"]},
    }
    allowed = [
        "UPDATE deliveries SET updated_at = now(), attempts = attempts || $1::jsonb",
        "DELETE FROM deliveries WHERE created_at < now() - interval '1 day'",
        "UPDATE webhooks SET delivery_count = delivery_count + 1 WHERE id = $1",
        "UPDATE shared.api_keys SET revoked_at = $1 WHERE revoked_at IS NULL",
        "INSERT INTO question_votes (question_id, visitor, helpful, locale, created_at) "
        "VALUES ($1, $2, $3, $4, now()) ON CONFLICT (question_id, visitor) DO UPDATE "
        "SET helpful = excluded.helpful, created_at = excluded.created_at",
        "SELECT coalesce(now(), now())",
    ]
    found = await refusals(engine, org.info.schema_name, [*refused, *allowed])
    assert found == {statement[:200]: rules for statement, rules in refused.items()}, found
