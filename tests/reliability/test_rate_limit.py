"""Per-key rate limits with RateLimit-* headers and 429 `rate_limited` + Retry-After."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tenancy.settings import get_settings
from tests.fixtures.orgs import make_org


@pytest.fixture
async def strict_app() -> AsyncIterator[Quart]:
    from api.app import create_app

    settings = get_settings().model_copy(
        update={"faq_rate_limits": "FREE=5,STARTER=8", "faq_rate_limit_window_seconds": 60}
    )
    app = create_app(settings)
    async with app.test_app():
        yield app


async def test_limit_headers_then_429_per_key(strict_app: Quart, engine: AsyncEngine) -> None:
    client: Any = strict_app.test_client()
    org = await make_org(engine, client, Plan.FREE)
    statuses = []
    for i in range(5):
        r = await org.get("/categories", scope="read")
        statuses.append(r.status_code)
        assert r.headers["RateLimit-Limit"] == "5"
        assert r.headers["RateLimit-Remaining"] == str(4 - i)
        assert 1 <= int(r.headers["RateLimit-Reset"]) <= 60
    assert statuses == [200] * 5
    r = await org.get("/categories", scope="read")
    assert r.status_code == 429
    body = await r.get_json()
    assert body["error"]["code"] == "rate_limited"
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    assert r.headers["RateLimit-Remaining"] == "0"
    # Another key of the same org has its own budget; a write refused changes nothing.
    r = await org.post("/categories", json={"name": "ok"}, scope="write")
    assert r.status_code == 201


async def test_limits_follow_the_plan(strict_app: Quart, engine: AsyncEngine) -> None:
    client: Any = strict_app.test_client()
    org = await make_org(engine, client, Plan.STARTER)
    r = await org.get("/categories", scope="read")
    assert r.headers["RateLimit-Limit"] == "8"


async def test_default_limits_are_generous(org: Any) -> None:
    r = await org.get("/categories")
    assert int(r.headers["RateLimit-Limit"]) >= 1200
