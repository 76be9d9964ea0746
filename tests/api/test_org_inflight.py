"""A per-org cap on requests in progress per API process (``FAQ_ORG_MAX_INFLIGHT``): one org
holding its whole share gets 429 ``rate_limited`` with ``Retry-After: 1`` (after a bounded wait
in its queue) while another org is served at once; a request that waits is served in turn when
a place frees up within the wait; the share comes back after every request,
also one that errored or was abandoned."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tenancy.settings import get_settings
from tests.api.questions.helpers import create
from tests.fixtures.locks import question_row_locked
from tests.fixtures.orgs import OrgClient, make_org

CAP = 2  # one write (weight 2) fills it


@pytest.fixture
async def capped_app() -> AsyncIterator[Quart]:
    from api.app import create_app

    settings = get_settings().model_copy(
        update={"faq_org_max_inflight": CAP, "faq_request_statement_timeout_ms": 0}
    )
    app = create_app(settings)
    async with app.test_app():
        yield app


async def until_waiting(engine: AsyncEngine, schema: str) -> None:
    """Until a backend waits on a row lock (the held PATCH is in progress in the app)."""
    for _ in range(200):
        async with engine.connect() as conn:
            waiting = await conn.scalar(
                text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
            )
        if waiting:
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the PATCH never waited on the lock")


async def test_one_org_past_its_share_gets_429_while_another_org_is_served(
    capped_app: Quart, engine: AsyncEngine
) -> None:
    client: Any = capped_app.test_client()
    noisy = await make_org(engine, client, Plan.PRO)
    quiet = await make_org(engine, client, Plan.PRO)
    question = await create(noisy, title="Held")
    async with question_row_locked(engine, noisy, question["id"]):
        held = asyncio.create_task(
            noisy.patch(f"/questions/{question['id']}", json={"title": "Moved"}, scope="write")
        )
        await until_waiting(engine, noisy.info.schema_name)
        loop = asyncio.get_running_loop()
        started = loop.time()
        refused = asyncio.create_task(noisy.get("/questions"))
        await asyncio.sleep(0.1)
        # Another org is served at once, while the noisy org's request waits in its queue.
        r = await asyncio.wait_for(quiet.get("/questions"), 10)
        assert r.status_code == 200
        assert loop.time() - started < 1.5
        assert not refused.done()
        r = await asyncio.wait_for(refused, 10)
        assert r.status_code == 429, await r.get_json()
        body = await r.get_json()
        assert body["error"]["code"] == "rate_limited"
        assert set(body["error"]) >= {"code", "message", "details"}
        assert r.headers["Retry-After"] == "1"
        assert loop.time() - started < 6.0  # a short bounded wait, not the lock's
        assert not held.done()
    r = await asyncio.wait_for(held, 10)
    assert r.status_code == 200, await r.get_json()
    # The share is back: the org works again, reads and writes.
    r = await noisy.get(f"/questions/{question['id']}")
    assert r.status_code == 200
    assert (await r.get_json())["data"]["title"] == "Moved"
    r = await noisy.patch(f"/questions/{question['id']}", json={"title": "Again"}, scope="write")
    assert r.status_code == 200, await r.get_json()


async def test_a_request_over_the_share_waits_its_turn(
    capped_app: Quart, engine: AsyncEngine
) -> None:
    """The queue: a request of the org past its share is served once the held one ends (a
    short burst of a normal client is delayed, not refused)."""
    client: Any = capped_app.test_client()
    org = await make_org(engine, client, Plan.PRO)
    question = await create(org, title="Held")
    async with question_row_locked(engine, org, question["id"]):
        held = asyncio.create_task(
            org.patch(f"/questions/{question['id']}", json={"title": "Moved"}, scope="write")
        )
        await until_waiting(engine, org.info.schema_name)
        waiting = asyncio.create_task(org.get(f"/questions/{question['id']}"))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # the share is full: it waits (before, it was served)
    r = await asyncio.wait_for(held, 10)
    assert r.status_code == 200
    r = await asyncio.wait_for(waiting, 10)
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["data"]["title"] == "Moved"  # served after the PATCH


async def test_no_slot_leaks_after_errors_or_an_abandoned_request(
    capped_app: Quart, engine: AsyncEngine
) -> None:
    client: Any = capped_app.test_client()
    org = await make_org(engine, client, Plan.PRO)
    question = await create(org)
    # Requests that end in errors: a validation error, a 404, a refused scope (after the org
    # is resolved), a 400 on a write. Each would fill the share (CAP) if it leaked.
    for _ in range(3):
        r = await org.patch(f"/questions/{question['id']}", json={"title": ""}, scope="write")
        assert r.status_code == 400
        r = await org.get("/questions/q_doesnotexist")
        assert r.status_code == 404
        r = await org.post("/questions", json={"title": "x"}, scope="read")
        assert r.status_code == 403
    # A request abandoned by its client while it waits on a lock.
    async with question_row_locked(engine, org, question["id"]):
        abandoned = asyncio.create_task(
            org.patch(f"/questions/{question['id']}", json={"title": "Gone"}, scope="write")
        )
        await until_waiting(engine, org.info.schema_name)
        abandoned.cancel()
        with pytest.raises(asyncio.CancelledError):
            await abandoned
    for _ in range(50):  # the app's side of the abandoned request ends with the lock
        r = await org.get(f"/questions/{question['id']}")
        if r.status_code == 200:
            break
        await asyncio.sleep(0.05)
    assert r.status_code == 200
    r = await org.patch(f"/questions/{question['id']}", json={"title": "Still"}, scope="write")
    assert r.status_code == 200, await r.get_json()


async def test_a_normal_client_with_a_few_parallel_reads_is_not_refused(org: OrgClient) -> None:
    """The default share lets a client run a few requests at once."""
    question = await create(org)
    answers = await asyncio.gather(
        *(org.get(f"/questions/{question['id']}") for _ in range(4)),
        *(org.get("/questions") for _ in range(4)),
    )
    assert [r.status_code for r in answers] == [200] * 8
    assert get_settings().faq_org_max_inflight >= 4
