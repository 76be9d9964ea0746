"""Helpers of the import tests: upload a file, run the job as the worker would, read it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.imports.run import run_import
from tenancy.db import tenant_session
from tests.fixtures.orgs import OrgClient

FIXTURES = Path(__file__).parent / "fixtures"
MEDIA = {"csv": "text/csv", "markdown": "application/zip", "faq": "application/zip"}


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


async def upload(org: OrgClient, fmt: str, body: bytes, **query: Any) -> Any:
    return await org.post(
        "/imports",
        data=body,
        query={"format": fmt, **{k: str(v).lower() for k, v in query.items()}},
        headers={"Content-Type": MEDIA.get(fmt, "application/json")},
    )


async def run(engine: AsyncEngine, org: OrgClient, fmt: str, body: bytes, **query: Any) -> Any:
    """Upload, run the job, and return it as ``GET /imports/{id}`` does."""
    r = await upload(org, fmt, body, **query)
    assert r.status_code == 202, await r.get_data()
    job = (await r.get_json())["data"]
    assert job["status"] == "queued"
    await run_import(engine, org.info.id, job["id"])
    r = await org.get(f"/imports/{job['id']}")
    assert r.status_code == 200
    return (await r.get_json())["data"]


async def enable_locales(org: OrgClient, *locales: str) -> None:
    r = await org.patch("/settings", json={"locales": ["en", *locales]})
    assert r.status_code == 200, await r.get_data()


async def all_questions(org: OrgClient) -> list[dict[str, Any]]:
    r = await org.get("/questions", query={"limit": 100})
    assert r.status_code == 200
    items: list[dict[str, Any]] = (await r.get_json())["data"]
    return items


async def all_categories(org: OrgClient) -> list[dict[str, Any]]:
    r = await org.get("/categories", query={"limit": 100})
    assert r.status_code == 200
    items: list[dict[str, Any]] = (await r.get_json())["data"]
    return items


async def outbox_events(engine: AsyncEngine, org: OrgClient) -> list[str]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(text("SELECT event FROM outbox ORDER BY id"))
        return [r.event for r in rows]


async def count_rows(engine: AsyncEngine, org: OrgClient, table: str) -> int:
    async with tenant_session(engine, org.info.schema_name) as session:
        return int((await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())
