"""Statement timeouts: a request whose statement runs past the request timeout gets a clean
503 ``service_unavailable`` with ``Retry-After`` (never a 500) and changes nothing; jobs have
a timeout of their own, longer by default."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tenancy.db import tenant_session
from tenancy.settings import Settings, get_settings
from tests.api.questions.helpers import create
from tests.fixtures.locks import question_row_locked
from tests.fixtures.orgs import make_org

TIMEOUT_MS = 300


@pytest.fixture
async def impatient_app() -> AsyncIterator[Quart]:
    from api.app import create_app

    settings = get_settings().model_copy(update={"faq_request_statement_timeout_ms": TIMEOUT_MS})
    app = create_app(settings)
    async with app.test_app():
        yield app


async def test_a_statement_past_the_timeout_is_a_clean_503(
    impatient_app: Quart, engine: AsyncEngine
) -> None:
    client: Any = impatient_app.test_client()
    org = await make_org(engine, client, Plan.STARTER)
    question = await create(org, title="Before the lock")
    # Another connection holds the row: the PATCH's statement waits on the lock, past the
    # timeout (a real statement running long on the server, cancelled by PostgreSQL).
    async with question_row_locked(engine, org, question["id"]):
        # Bounded here: without a timeout the PATCH would wait for the lock forever.
        r = await asyncio.wait_for(
            org.patch(
                f"/questions/{question['id']}", json={"title": "After the lock"}, scope="write"
            ),
            10,
        )
    assert r.status_code == 503, await r.get_json()
    body = await r.get_json()
    assert body["error"]["code"] == "service_unavailable"
    assert set(body["error"]) >= {"code", "message", "details"}
    assert int(r.headers["Retry-After"]) >= 1
    # Nothing changed, and the org answers normally once the lock is gone.
    r = await org.get(f"/questions/{question['id']}")
    assert r.status_code == 200
    assert (await r.get_json())["data"]["title"] == "Before the lock"
    r = await org.patch(
        f"/questions/{question['id']}", json={"title": "After the lock"}, scope="write"
    )
    assert r.status_code == 200, await r.get_json()


@pytest.mark.serial  # a bound on time: run with the machine to itself
async def test_a_slow_read_is_cut_at_the_timeout(impatient_app: Quart, engine: AsyncEngine) -> None:
    """The timeout bounds the time a request holds a connection: the 503 comes near it."""
    client: Any = impatient_app.test_client()
    org = await make_org(engine, client, Plan.STARTER)
    question = await create(org)
    loop = asyncio.get_running_loop()
    async with question_row_locked(engine, org, question["id"]):
        started = loop.time()
        r = await asyncio.wait_for(org.delete(f"/questions/{question['id']}", scope="write"), 10)
    elapsed = loop.time() - started
    assert r.status_code == 503
    assert elapsed < 3.0, elapsed


def test_jobs_have_a_longer_timeout_of_their_own() -> None:
    settings = Settings()
    assert settings.faq_request_statement_timeout_ms == 5_000
    assert settings.faq_job_statement_timeout_ms == 60_000
    assert Settings(faq_request_statement_timeout_ms=0).faq_request_statement_timeout_ms == 0


async def test_the_timeout_is_local_to_each_transaction() -> None:
    """Tenant transactions run under the engine's timeout (request by default, the job one for
    the worker's engine); it is SET LOCAL, so the pooled connection does not keep it."""
    from tenancy.db import make_engine

    settings = get_settings().model_copy(update={"faq_db_max_overflow": 0})
    for timeout_ms, shown in ((None, "5s"), (60_000, "1min"), (0, "0")):
        one = make_engine(settings, pool_size=1, statement_timeout_ms=timeout_ms)
        try:
            async with tenant_session(one, "t_" + "0" * 26) as session, session.begin():
                inside = (await session.execute(text("SHOW statement_timeout"))).scalar_one()
            async with one.connect() as conn:  # the same (only) connection, no org bound
                after = (await conn.execute(text("SHOW statement_timeout"))).scalar_one()
        finally:
            await one.dispose()
        assert (inside, after) == (shown, "0")
