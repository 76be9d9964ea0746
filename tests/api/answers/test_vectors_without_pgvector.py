"""Without pgvector (issue 28): a database where the service's role may not create the
extension (pgvector is not a trusted extension: on a managed service only its administrator
may), as on a server without it. Migrations succeed, no embeddings table is made, the service
ranks lexically only and says so once in the log and in ``GET /readyz``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import structlog
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers.semantic import forget_status, semantic_status
from api.answers.vectors import nearest, similar_to
from api.orgs import create_org
from billing.plans import Plan
from tasks.embeddings import embed_org_questions
from tenancy.db import make_engine, tenant_session
from tenancy.schemas import migrate_tenants, upgrade_shared_schema
from tenancy.settings import get_settings
from tests.fixtures.orgs import unique_slug
from tests.fixtures.services import Services

NAME = f"faq_novector_{os.getpid()}"


@pytest.fixture(scope="module")
async def database_url(services: Services) -> AsyncIterator[str]:
    """A database owned by a role that is not a superuser: CREATE EXTENSION vector fails."""
    admin_url = services.postgres.url
    # asyncpg's own DSN says sslmode where the service's URL says ssl (?ssl=disable on Citus).
    admin_dsn = admin_url.replace("ssl=", "sslmode=")
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f"CREATE ROLE {NAME} LOGIN NOSUPERUSER")
        await conn.execute(f"CREATE DATABASE {NAME} OWNER {NAME}")
    finally:
        await conn.close()
    parts = urlsplit(admin_url)
    netloc = f"{NAME}@{parts.hostname}:{parts.port}"
    yield urlunsplit((parts.scheme, netloc, f"/{NAME}", parts.query, ""))
    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {NAME} WITH (FORCE)")
        await conn.execute(f"DROP ROLE IF EXISTS {NAME}")
    finally:
        await conn.close()


@pytest.fixture(scope="module")
async def bare_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(get_settings().model_copy(update={"database_url": database_url}))
    await upgrade_shared_schema(engine)
    await migrate_tenants(engine)
    yield engine
    await engine.dispose()


async def test_migrations_run_and_search_is_lexical_only(bare_engine: AsyncEngine) -> None:
    forget_status()
    async with bare_engine.connect() as conn:
        assert (await conn.execute(text("SELECT to_regtype('public.vector')"))).scalar() is None
    org = await create_org(bare_engine, unique_slug("novec"), None, Plan.STARTER)
    with structlog.testing.capture_logs() as logs:
        first = await semantic_status(bare_engine)
        again = await semantic_status(bare_engine)
    assert first is again and not first.available
    assert first.details() == {
        "available": False,
        "mode": "lexical only",
        "reason": "the pgvector extension is not installed in the database",
    }
    assert [e["event"] for e in logs] == ["semantic_search_unavailable"]  # once

    async with tenant_session(bare_engine, org.schema_name) as session:
        table = (await session.execute(text("SELECT to_regclass('question_embeddings')"))).scalar()
        assert table is None
        vector = [1.0] + [0.0] * 255
        found = await nearest(
            session, vector, locale="en", limit=5, published_only=True, category_ids=None
        )
        assert found == []
        assert await similar_to(session, "q_x", "en", 5) == []
    counts = await embed_org_questions(bare_engine, org.id, ["q_x"])
    assert (counts.embedded, counts.deleted) == (0, 0)


async def test_readyz_says_lexical_only(database_url: str, bare_engine: AsyncEngine) -> None:
    from api.app import create_app

    saved = os.environ["DATABASE_URL"]
    os.environ["DATABASE_URL"] = database_url
    get_settings.cache_clear()
    try:
        app = create_app()
        async with app.test_app():
            r = await app.test_client().get("/readyz")
    finally:
        os.environ["DATABASE_URL"] = saved
        get_settings.cache_clear()
    assert r.status_code == 200
    assert await r.get_json() == {
        "status": "ready",
        "details": {
            "semanticSearch": {
                "available": False,
                "mode": "lexical only",
                "reason": "the pgvector extension is not installed in the database",
            }
        },
    }


async def test_readyz_of_a_database_with_pgvector_is_plain(client: object) -> None:
    r = await client.get("/readyz")  # type: ignore[attr-defined]
    assert r.status_code == 200 and await r.get_json() == {"status": "ready"}
