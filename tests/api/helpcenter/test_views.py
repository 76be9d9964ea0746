"""Question page views (issue 16): counted once per visitor per question per day, recorded off
the request path (Redis: a per-org per-day set with a TTL and a cap) and aggregated by the
``help-center-views`` job into ``question_views_daily``; the job is idempotent."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter import visitors
from api.helpcenter.feedback import flush_views
from api.helpcenter.visitors import (
    VISITOR_COOKIE,
    new_visitor_token,
    question_views_daily,
    views_key,
)
from tasks.help_center import aggregate_views
from tenancy.db import tenant_session
from tenancy.redis import loop_client
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


def today() -> date:
    return datetime.now(UTC).date()


def url(org: OrgClient, slug: str) -> str:
    return f"/hc/{org.slug}/en/questions/{slug}"


async def views(engine: AsyncEngine, org: OrgClient) -> dict[tuple[str, date], int]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(select(question_views_daily))
        return {(r.question_id, r.day): r.views for r in rows}


async def open_page(client: Any, path: str, times: int = 1) -> None:
    for _ in range(times):
        assert (await client.get(path)).status_code == 200


def returning_reader(app: Quart) -> Any:
    """A reader whose cookie (signed by the service) was made on an earlier day."""
    client = app.test_client()
    token = new_visitor_token(today() - timedelta(days=3))
    client.set_cookie("localhost", VISITOR_COOKIE, token, path="/hc")
    return client


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "Where is my parcel?", "On its way.")


@pytest.fixture
async def same_day() -> date:
    """Today (UTC), with a minute left of it at least: the test's views fall on one day."""
    now = datetime.now(UTC)
    left = (datetime.combine(now.date() + timedelta(days=1), time.min, UTC) - now).total_seconds()
    if left < 60:
        await asyncio.sleep(left + 1)
    return today()


async def run_job(name: str) -> dict[str, Any]:
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tasks.cli", "jobs", "run", name],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert printed["job"] == name
    result: dict[str, Any] = printed["result"]
    return result


async def test_one_reader_twice_counts_one_and_two_readers_count_two(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any], same_day: date
) -> None:
    other = await question(org, "Can I change the address?", "Yes.")
    first = app.test_client()
    await open_page(first, url(org, published["slug"]), times=2)  # no cookie, then its cookie
    await open_page(first, url(org, other["slug"]))
    await flush_views(app)
    assert await views(engine, org) == {}  # recorded, not yet counted
    await aggregate_views(engine)
    assert await views(engine, org) == {(published["id"], same_day): 1, (other["id"], same_day): 1}
    await open_page(returning_reader(app), url(org, published["slug"]), times=2)
    await flush_views(app)
    await aggregate_views(engine)
    assert (await views(engine, org))[(published["id"], same_day)] == 2


async def test_a_client_without_cookies_counts_once_by_its_address(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any], same_day: date
) -> None:
    for _ in range(3):
        await open_page(app.test_client(use_cookies=False), url(org, published["slug"]))
    await flush_views(app)
    await aggregate_views(engine)
    assert await views(engine, org) == {(published["id"], same_day): 1}


async def test_the_job_is_idempotent_and_a_count_never_goes_down(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any], same_day: date
) -> None:
    for _ in range(3):
        await open_page(returning_reader(app), url(org, published["slug"]))
    await flush_views(app)
    expected = {(published["id"], same_day): 3}
    first = await run_job("help-center-views")
    assert first["failed"] == 0 and first["orgs"] >= 1
    assert await views(engine, org) == expected
    await run_job("help-center-views")  # again: the same count, not twice it
    assert await views(engine, org) == expected
    await aggregate_views(engine)
    assert await views(engine, org) == expected
    # Redis lost the day's set: a recount keeps what was counted.
    await loop_client().delete(views_key(org.info.id, same_day))
    await open_page(returning_reader(app), url(org, published["slug"]))
    await flush_views(app)
    await aggregate_views(engine)
    assert await views(engine, org) == expected


async def test_only_a_question_page_shown_counts(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any], same_day: date
) -> None:
    reader = app.test_client()
    draft = await question(org, "Unreleased", "Hidden.", status="draft")
    assert (await reader.get(url(org, draft["slug"]))).status_code == 404
    assert (await reader.get(url(org, "nothing-here"))).status_code == 404
    assert (await reader.get(f"/hc/{org.slug}/en")).status_code == 200
    assert (await reader.head(url(org, published["slug"]))).status_code == 200  # not a reader
    await flush_views(app)
    assert not await loop_client().exists(views_key(org.info.id, same_day))
    await open_page(reader, url(org, published["slug"]))
    await flush_views(app)
    await aggregate_views(engine)
    assert await views(engine, org) == {(published["id"], same_day): 1}


async def test_recorded_views_are_bounded_and_hold_no_raw_visitor(
    app: Quart,
    org: OrgClient,
    published: dict[str, Any],
    same_day: date,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(visitors, "MAX_VIEWS_PER_ORG_DAY", 2)
    readers = [returning_reader(app) for _ in range(4)]
    for reader in readers:
        await open_page(reader, url(org, published["slug"]))
    await flush_views(app)
    redis = loop_client()
    key = views_key(org.info.id, same_day)
    raw: set[bytes] = await redis.smembers(key)  # type: ignore[assignment,misc]
    members = {m.decode() for m in raw}
    assert len(members) == 2  # the org's cap for the day
    assert 0 < await redis.ttl(key) <= visitors.VIEW_SET_TTL_SECONDS
    cookies = {c.value.split(".")[0] for r in readers for c in r.cookie_jar}
    for member in members:
        question_id, _, visitor = member.partition(":")
        assert question_id == published["id"] and len(visitor) == 16
        assert visitor not in cookies and "127.0.0.1" not in member
