"""The outbox lives in each org's schema (issue 18): a request's transaction touches that schema
only (one Citus node), and the shared ``outbox_pending`` index, written outside the tenant
transaction before it commits, guides the relay to the orgs with events."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event, func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Delivery
from tasks import relay
from tasks.relay import relay_all, relay_org
from tenancy.db import shared_session, tenant_session
from tenancy.outbox import OUTBOX, PENDING, record_events
from tenancy.schemas import migrate_tenants
from tenancy.transactions import commit
from tests.api.questions.helpers import create, events
from tests.fixtures.orgs import OrgClient


@pytest.fixture
def transactions() -> Iterator[list[list[str]]]:
    """Every transaction sent through any engine, as its list of statements."""
    done: list[list[str]] = []
    open_: dict[int, list[str]] = {}

    def on_cursor(conn: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _m: bool) -> None:
        sql = statement.replace("__tenant__.", "")  # the schema-free marker, stripped later
        open_.setdefault(id(conn.connection.dbapi_connection), []).append(sql)

    def on_end(conn: Any) -> None:
        done.append(open_.pop(id(conn.connection.dbapi_connection), []))

    event.listen(Engine, "before_cursor_execute", on_cursor)
    event.listen(Engine, "commit", on_end)
    event.listen(Engine, "rollback", on_end)
    yield done
    event.remove(Engine, "before_cursor_execute", on_cursor)
    event.remove(Engine, "commit", on_end)
    event.remove(Engine, "rollback", on_end)


async def pending(engine: AsyncEngine, org_id: str) -> bool:
    async with shared_session(engine) as session:
        found = await session.execute(select(PENDING.c.org_id).where(PENDING.c.org_id == org_id))
        return found.first() is not None


async def outbox_count(engine: AsyncEngine, org: OrgClient) -> int:
    async with tenant_session(engine, org.info.schema_name) as session:
        return int((await session.execute(select(func.count()).select_from(OUTBOX))).scalar_one())


async def test_a_question_create_writes_its_event_in_the_org_schema_only(
    engine: AsyncEngine, org: OrgClient, transactions: list[list[str]]
) -> None:
    question = await create(org)
    writes = [t for t in transactions if any("INSERT INTO questions" in s for s in t)]
    assert len(writes) == 1
    (tx,) = writes
    assert any("INSERT INTO outbox" in s for s in tx)
    assert [s for s in tx if "shared." in s] == []
    # The event is in the org's own outbox, and the org is marked as having events.
    assert [e for e, d in await events(engine, org) if d.get("id") == question["id"]] == [
        "question.created"
    ]
    assert await pending(engine, org.info.id)


async def test_a_marker_without_a_committed_event_costs_one_empty_check(
    engine: AsyncEngine, org: OrgClient
) -> None:
    # The marker is written outside the tenant transaction, before it commits: a crash (here a
    # rollback) between the two leaves a marker and no event.
    async with tenant_session(engine, org.info.schema_name) as session:
        await record_events(session, org.info.id, [("question.created", {"id": "q_lost"})])
        await session.rollback()
    assert await pending(engine, org.info.id)
    assert await outbox_count(engine, org) == 0
    assert (await relay_all(engine))["failed"] == 0
    assert not await pending(engine, org.info.id)


async def test_the_relay_moves_a_marked_orgs_events_and_then_clears_its_marker(
    engine: AsyncEngine, org: OrgClient
) -> None:
    async with tenant_session(engine, org.info.schema_name) as session:
        await record_events(session, org.info.id, [("question.created", {"id": "q_1"})])
        await commit(session)
    assert await pending(engine, org.info.id)
    assert await outbox_count(engine, org) == 1
    found = await relay_all(engine)
    assert found["events"] >= 1 and found["failed"] == 0
    assert await outbox_count(engine, org) == 0
    assert not await pending(engine, org.info.id)


async def test_an_event_committed_while_the_relay_clears_the_marker_is_not_stranded(
    engine: AsyncEngine, org: OrgClient
) -> None:
    # A writer has written its event and its marker but not committed when the relay finds the
    # outbox empty and clears the marker: the relay's re-check waits for that writer.
    async with tenant_session(engine, org.info.schema_name) as session:
        await record_events(session, org.info.id, [("question.created", {"id": "q_2"})])
        relay = asyncio.create_task(relay_org(engine, org.info.id))
        await asyncio.sleep(0.5)
        await commit(session)
    relayed = await asyncio.wait_for(relay, 30)
    # Either the relay moved it, or the marker is back for the next sweep.
    assert relayed == 1 or await pending(engine, org.info.id)
    await relay_all(engine)
    assert await outbox_count(engine, org) == 0
    assert not await pending(engine, org.info.id)


async def test_migrating_an_existing_schema_moves_its_pending_events_in_order(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    # The org's schema as the previous release left it: no outbox of its own (revision 0006),
    # and two events of it (plus one of another org) still in the shared outbox.
    schema = org.info.schema_name
    async with engine.begin() as conn:
        await conn.execute(text(f'DROP TABLE "{schema}".outbox'))
        # ... nor the tables of the revisions after 0007.
        for table in (
            "question_votes",
            "question_views_daily",
            "audit_entries",
            "search_events",
            "search_daily",
            "question_feedback_daily",
            # issues 28-32 (revisions 0011-0014)
            "question_embeddings",
            "synonyms",
            "external_refs",
            "import_chunks",
            "imports",
            "export_chunks",
            "exports",
            "question_drafts",
            "members",
            "workflow_settings",
            "help_center_logo",
            # issue 39 (revision 0018)
            "audiences",
            # issue 39, analytics per audience (revision 0020)
            "search_audience_daily",
            "question_audience_views_daily",
        ):
            await conn.execute(text(f'DROP TABLE IF EXISTS "{schema}".{table} CASCADE'))
        # ... nor the columns of later revisions on older tables (0015, issue 40).
        await conn.execute(text(f'ALTER TABLE "{schema}".question_translations DROP COLUMN author'))
        # ... and those of issue 39 (0019).
        for table, column in (
            ("categories", "audiences"),
            ("categories", "audience_path"),
            ("questions", "audiences"),
        ):
            await conn.execute(text(f'ALTER TABLE "{schema}".{table} DROP COLUMN {column}'))
        await conn.execute(text(f"UPDATE \"{schema}\".alembic_version SET version_num = '0006'"))
        await conn.execute(
            text("UPDATE shared.organizations SET schema_revision = '0006' WHERE id = :id"),
            {"id": org.info.id},
        )
        for n, org_id in enumerate([org.info.id, other_org.info.id, org.info.id]):
            await conn.execute(
                text(
                    "INSERT INTO shared.outbox (event_id, org_id, event, data) "
                    "VALUES (:e, :o, 'question.created', CAST(:d AS jsonb))"
                ),
                {"e": f"evt_{org.info.id[-20:]}_{n}", "o": org_id, "d": f'{{"n": {n}}}'},
            )
    reports = await migrate_tenants(engine)
    # 0007 (the move) and every later revision, without error.
    [(applied, error)] = [(r.applied, r.error) for r in reports if r.schema == schema]
    assert applied[0] == "0007" and error is None, (applied, error)
    assert await events(engine, org) == [
        ("question.created", {"n": 0}),
        ("question.created", {"n": 2}),
    ]
    assert await pending(engine, org.info.id)
    async with engine.connect() as conn:
        left = await conn.scalar(
            text("SELECT count(*) FROM shared.outbox WHERE org_id = :o"), {"o": org.info.id}
        )
        other = await conn.scalar(
            text("DELETE FROM shared.outbox WHERE org_id = :o RETURNING 1"),
            {"o": other_org.info.id},
        )
        await conn.commit()
    assert left == 0 and other == 1  # the other org's event is left for its own migration
    await relay_all(engine)
    assert await outbox_count(engine, org) == 0 and not await pending(engine, org.info.id)


async def test_events_an_old_process_writes_to_the_shared_outbox_are_still_relayed(
    engine: AsyncEngine, org: OrgClient
) -> None:
    # During a rolling upgrade, processes of the previous release write shared.outbox.
    r = await org.post(
        "/webhooks",
        json={"url": "https://127.0.0.1:9/legacy", "events": ["question.created"]},
    )
    assert r.status_code == 201, await r.get_json()
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO shared.outbox (event_id, org_id, event, data) "
                "VALUES (:e, :o, 'question.created', CAST(:d AS jsonb))"
            ),
            {"e": f"evt_{org.info.id[-20:]}_old", "o": org.info.id, "d": '{"id": "q_old"}'},
        )
    found = await relay_all(engine)
    assert found["failed"] == 0 and found["events"] >= 1
    async with engine.connect() as conn:
        left = await conn.scalar(
            text("SELECT count(*) FROM shared.outbox WHERE org_id = :o"), {"o": org.info.id}
        )
    async with tenant_session(engine, org.info.schema_name) as session:
        delivered = (await session.execute(select(Delivery.event, Delivery.data))).all()
    assert left == 0
    assert [(e, d) for e, d in delivered] == [("question.created", {"id": "q_old"})]
    assert not await pending(engine, org.info.id)


async def test_a_sweep_does_not_start_while_one_of_its_process_runs(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """The periodic relay may be enqueued again before a long sweep ends: the second run of the
    same process returns at once instead of visiting the same orgs beside the first."""
    async with tenant_session(engine, org.info.schema_name) as session:
        await record_events(session, org.info.id, [("question.created", {"id": "q_2"})])
        await commit(session)
    started, release = asyncio.Event(), asyncio.Event()
    real_relay_org = relay.relay_org

    async def slow_relay_org(*args: Any, **kw: Any) -> int:
        started.set()
        await release.wait()
        return await real_relay_org(*args, **kw)

    relay.relay_org = slow_relay_org  # type: ignore[assignment]
    try:
        first = asyncio.create_task(relay_all(engine))
        await asyncio.wait_for(started.wait(), 10)
        # Without the guard this second sweep would wait on the first's org (bounded here).
        second = await asyncio.wait_for(relay_all(engine), 10)
        assert second == {"orgs": 0, "events": 0, "failed": 0}
        release.set()
        assert (await first)["events"] >= 1
    finally:
        relay.relay_org = real_relay_org  # type: ignore[assignment]
        release.set()
    assert await outbox_count(engine, org) == 0
    assert not await pending(engine, org.info.id)


async def test_a_writer_holding_its_org_row_gets_an_error_not_a_hang(
    engine: AsyncEngine, org: OrgClient
) -> None:
    # The marker's foreign key takes KEY SHARE on the org's row, on a connection of its own:
    # a transaction holding FOR UPDATE on that row while it records events would wait for the
    # marker forever (PostgreSQL cannot see the cycle). The marker gives up after its
    # lock_timeout instead, and the writer's transaction rolls back with nothing written.
    before = await outbox_count(engine, org)
    started = asyncio.get_running_loop().time()
    with pytest.raises(DBAPIError, match="lock timeout"):
        async with tenant_session(engine, org.info.schema_name) as session:
            await session.execute(
                text("SELECT 1 FROM shared.organizations WHERE id = :id FOR UPDATE"),
                {"id": org.info.id},
            )
            await asyncio.wait_for(
                record_events(session, org.info.id, [("category.created", {"n": 1})]), 30
            )
    assert asyncio.get_running_loop().time() - started < 20
    assert await outbox_count(engine, org) == before
