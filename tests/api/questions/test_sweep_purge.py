"""The publish sweep (actor, scheduler, concurrency, cost) and the purge of deleted questions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import dramatiq
import pytest
import redis
from sqlalchemy import event, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from api.questions.models import IdempotencyKey, PublishSchedule, Question, QuestionRevision
from tasks.publishing import QUEUE, SweepIncomplete, publish_due_questions
from tasks.scheduler import LOCK_NAME
from tasks.worker import broker
from tenancy.clock import iso, utcnow
from tenancy.db import shared_session, tenant_session
from tests.api.questions.helpers import create, default_category, events, question_events

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
PAST = "2020-01-01T00:00:00.000Z"
FUTURE = "2099-01-01T00:00:00.000Z"
TENANT_SCHEMA = re.compile(r"\bt_[0-9a-z]{26}\b")


@contextlib.contextmanager
def statements(engine: AsyncEngine) -> Iterator[list[str]]:
    """The SQL the engine sends while the block runs, each with its parameters (an org's
    schema reaches PostgreSQL in the SQL or as the parameter of a search_path setting)."""
    seen: list[str] = []

    def record(_conn, _cursor, statement, params, _context, _many):
        seen.append(f"{statement} {params!r}")

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


async def get(org, qid):
    r = await org.get(f"/questions/{qid}", scope="read")
    return (await r.get_json())["data"]


async def next_due(engine, org):
    async with shared_session(engine) as session:
        return (
            await session.execute(
                select(PublishSchedule.next_due_at).where(PublishSchedule.org_id == org.info.id)
            )
        ).scalar_one_or_none()


async def test_sweep_publishes_due_questions_only(engine, org):
    due = await create(org, title="Due", scheduledPublishAt=PAST)
    later = await create(org, title="Later", scheduledPublishAt=FUTURE)
    assert due["status"] == "scheduled"
    assert iso(await next_due(engine, org)) == PAST
    with statements(engine) as sql:
        result = await publish_due_questions(engine)
    assert result["published"] >= 1
    assert any(org.info.schema_name in s for s in sql)  # it did work in this org's schema
    published = await get(org, due["id"])
    assert published["status"] == "published"
    assert published["scheduledPublishAt"] is None
    assert published["publishedAt"] is not None and published["publishedAt"] > due["createdAt"]
    assert (await get(org, later["id"]))["status"] == "scheduled"
    assert iso(await next_due(engine, org)) == FUTURE
    r = await org.get(f"/questions/{due['id']}/revisions", scope="read")
    revs = (await r.get_json())["data"]
    assert len(revs) == 1
    assert revs[0]["actor"] == {"type": "system", "id": "scheduler"}
    assert set(revs[0]["changedFields"]) == {"status", "scheduledPublishAt", "publishedAt"}
    assert revs[0]["snapshot"]["status"] == "scheduled"
    assert await question_events(engine, org, due["id"]) == [
        "question.created",
        "question.published",
        "question.updated",
    ]
    sent = [d for _, d in await events(engine, org) if d["id"] == due["id"]]
    assert sent[1] == sent[2] == published  # the question as GET shows it (issue 40)
    # Once nothing is scheduled any more, the org leaves the schedule.
    await org.patch(f"/questions/{later['id']}", json={"scheduledPublishAt": None}, scope="write")
    await publish_due_questions(engine)  # the entry is stale-early only if due: still FUTURE here
    assert iso(await next_due(engine, org)) == FUTURE
    await org.patch(f"/questions/{later['id']}", json={"scheduledPublishAt": PAST}, scope="write")
    await org.patch(f"/questions/{later['id']}", json={"status": "draft"}, scope="write")
    await publish_due_questions(engine)
    assert await next_due(engine, org) is None
    assert (await get(org, later["id"]))["status"] == "draft"


async def test_a_sweep_with_nothing_due_touches_no_tenant_schema(engine, org):
    await create(org, title="Later", scheduledPublishAt=FUTURE)
    await publish_due_questions(engine)  # whatever other tests left due
    with statements(engine) as sql:
        result = await publish_due_questions(engine)
    assert result == {"orgs": 0, "published": 0}
    assert len(sql) == 1 and "publish_schedule" in sql[0]
    assert not any(TENANT_SCHEMA.search(s) or "search_path" in s for s in sql)


async def test_deleted_and_unscheduled_questions_are_not_published(engine, org):
    gone = await create(org, title="Gone", scheduledPublishAt=PAST)
    await org.delete(f"/questions/{gone['id']}", scope="write")
    await publish_due_questions(engine)
    async with tenant_session(engine, org.info.schema_name) as session:
        status = (
            await session.execute(select(Question.status).where(Question.id == gone["id"]))
        ).scalar_one()
    assert status == "scheduled"
    assert await question_events(engine, org, gone["id"]) == [
        "question.created",
        "question.deleted",
    ]
    assert await next_due(engine, org) is None


async def published_once(engine, org, qid):
    evs = await question_events(engine, org, qid)
    r = await org.get(f"/questions/{qid}/revisions", scope="read")
    revs = (await r.get_json())["data"]
    return evs.count("question.published") == 1 and len(revs) == 1


async def test_two_concurrent_sweeps_publish_each_question_once(engine, org_factory):
    orgs = [await org_factory() for _ in range(6)]
    made = []
    for o in orgs:
        category_id = await default_category(o)
        made += [
            (o, await create(o, category_id, title=f"Q{i}", scheduledPublishAt=PAST))
            for i in range(3)
        ]
    first, second = await asyncio.gather(
        publish_due_questions(engine), publish_due_questions(engine)
    )
    assert first["published"] + second["published"] >= len(made)
    for o, q in made:
        assert (await get(o, q["id"]))["status"] == "published"
        assert await published_once(engine, o, q["id"])


def faq(*args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tasks.cli", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_faq_jobs_run_publish_sweep_in_two_processes_at_once(engine, org_factory):
    orgs = [await org_factory() for _ in range(3)]
    made = []
    for o in orgs:
        category_id = await default_category(o)
        made += [
            (o, await create(o, category_id, title=f"Q{i}", scheduledPublishAt=PAST))
            for i in range(2)
        ]
    runs = [faq("jobs", "run", "publish-sweep") for _ in range(2)]
    outputs = [await asyncio.to_thread(p.communicate, timeout=60) for p in runs]
    assert [p.returncode for p in runs] == [0, 0], outputs
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert all(r["job"] == "publish-sweep" for r in results)
    assert sum(r["result"]["published"] for r in results) >= len(made)
    for o, q in made:
        assert await published_once(engine, o, q["id"])


async def test_scheduler_and_worker_publish_within_one_period(engine, org):
    period = 1.0
    lock = redis.Redis.from_url(os.environ["REDIS_URL"])
    # A scheduler another test left behind would hold the lock: wait for it to lapse.
    lapse = time.monotonic() + 60
    while await asyncio.to_thread(lock.exists, LOCK_NAME):
        assert time.monotonic() < lapse, "another scheduler keeps the lock"
        await asyncio.sleep(0.2)
    scheduler = faq("scheduler", FAQ_PUBLISH_SWEEP_SECONDS=str(period))
    # The worker serves the sweep's own queue only (``tasks.publishing.QUEUE``): the default
    # queue holds what earlier tests of this process left (embedding backfills that load a
    # model for seconds, relays of orgs long gone), which a test of the sweep must not wait
    # behind, nor share the interpreter with.
    worker = dramatiq.Worker(broker, queues={QUEUE}, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        # The scheduler is up once it holds its lock (the first sweep is enqueued at once).
        started = time.monotonic() + 60
        while not await asyncio.to_thread(lock.exists, LOCK_NAME):
            assert time.monotonic() < started and scheduler.poll() is None, "no scheduler"
            await asyncio.sleep(0.1)
        due_at = utcnow() + timedelta(seconds=3)
        q = await create(org, title="Timed", scheduledPublishAt=iso(due_at))
        assert q["status"] == "scheduled"
        deadline = time.monotonic() + 20
        data = q
        while time.monotonic() < deadline and data["status"] != "published":
            await asyncio.sleep(0.2)
            data = await get(org, q["id"])
        assert data["status"] == "published", "not published by the scheduled sweep"
        published_at = utcnow().fromisoformat(data["publishedAt"])
        # Published at the first sweep after its time: within one period (plus queue latency).
        assert due_at <= published_at <= due_at + timedelta(seconds=period + 3)
    finally:
        scheduler.terminate()
        await asyncio.to_thread(scheduler.wait, 20)
        await asyncio.to_thread(worker.stop)
        lock.close()
    assert scheduler.returncode is not None


async def test_purge_removes_questions_deleted_over_30_days_ago_and_expired_keys(engine, org):
    old = await create(org, title="Old")
    recent = await create(org, title="Recent")
    await org.patch(f"/questions/{old['id']}", json={"order": 3}, scope="write")
    for q in (old, recent):
        await org.delete(f"/questions/{q['id']}", scope="write")
    body = {"title": "K", "answer": "A", "categoryId": old["categoryId"], "status": "draft"}
    for key in ("expired", "fresh"):
        r = await org.post(
            "/questions", json=body, scope="write", headers={"X-Idempotency-Key": key}
        )
        assert r.status_code == 201
    now = utcnow()
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            update(Question)
            .where(Question.id == old["id"])
            .values(deleted_at=now - timedelta(days=31))
        )
        await session.execute(
            update(Question)
            .where(Question.id == recent["id"])
            .values(deleted_at=now - timedelta(days=29))
        )
        await session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.key == "expired")
            .values(created_at=now - timedelta(hours=25))
        )
    run = faq("jobs", "run", "purge-deleted")
    out, err = await asyncio.to_thread(run.communicate, timeout=120)
    assert run.returncode == 0, err
    printed = json.loads(out.strip().splitlines()[-1])
    assert printed["job"] == "purge-deleted"
    result = printed["result"]
    assert result["questions"] >= 1 and result["idempotencyKeys"] >= 1
    assert result["failed"] == 0
    async with tenant_session(engine, org.info.schema_name) as session:
        ids = set((await session.execute(select(Question.id))).scalars())
        revisions = (
            await session.execute(
                select(func.count())
                .select_from(QuestionRevision)
                .where(QuestionRevision.question_id == old["id"])
            )
        ).scalar_one()
        keys = set((await session.execute(select(IdempotencyKey.key))).scalars())
    assert old["id"] not in ids and recent["id"] in ids
    assert revisions == 0
    assert keys == {"fresh"}
    # The purged question stays a 404; the recent one too (still soft-deleted).
    for q in (old, recent):
        assert (await org.get(f"/questions/{q['id']}", scope="read")).status_code == 404


async def test_an_org_that_fails_does_not_stop_the_others(engine, org, other_org):
    ok = await create(org, title="Fine", scheduledPublishAt=PAST)
    stuck = await create(other_org, title="Stuck", scheduledPublishAt=PAST)
    schema = other_org.info.schema_name
    async with engine.begin() as conn:
        await conn.execute(text(f'ALTER TABLE "{schema}".questions RENAME TO questions_away'))
    try:
        with pytest.raises(SweepIncomplete):
            await publish_due_questions(engine)
        assert (await get(org, ok["id"]))["status"] == "published"
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'ALTER TABLE "{schema}".questions_away RENAME TO questions'))
    assert (await get(other_org, stuck["id"]))["status"] == "scheduled"
    await publish_due_questions(engine)  # the retry
    assert (await get(other_org, stuck["id"]))["status"] == "published"


async def test_sweep_and_reorder_keep_only_50_revisions_too(engine, org):
    q = await create(org)
    other = await create(org, title="Other")
    for i in range(50):
        await org.patch(f"/questions/{q['id']}", json={"order": i + 1}, scope="write")
    await org.patch(f"/questions/{q['id']}", json={"scheduledPublishAt": PAST}, scope="write")
    await publish_due_questions(engine)
    r = await org.get(f"/questions/{q['id']}/revisions", query={"limit": 100}, scope="read")
    numbers = [rev["number"] for rev in (await r.get_json())["data"]]
    assert numbers == list(range(52, 2, -1))
    await org.post("/questions/reorder", json={"ids": [q["id"], other["id"]]}, scope="write")
    r = await org.get(f"/questions/{q['id']}/revisions", query={"limit": 100}, scope="read")
    data = (await r.get_json())["data"]
    assert [rev["number"] for rev in data] == list(range(53, 3, -1))
    assert data[0]["changedFields"] == ["order"]
