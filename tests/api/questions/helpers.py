"""Small helpers of the question tests: a default category, a create, the org's events."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.audit import AUDIT_EVENT
from tenancy.db import tenant_session
from tenancy.outbox import OutboxEvent
from tests.fixtures.orgs import OrgClient


async def default_category(org: OrgClient) -> str:
    r = await org.get("/categories", query={"limit": 100})
    assert r.status_code == 200
    return next(c["id"] for c in (await r.get_json())["data"] if c["isDefault"])


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


async def events(engine: AsyncEngine, org: OrgClient) -> list[tuple[str, dict[str, Any]]]:
    """The org's outbox events, oldest first, as (event, data)."""
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(
            select(OutboxEvent.event, OutboxEvent.data)
            .where(OutboxEvent.event != AUDIT_EVENT)  # the audit log's, never delivered
            .order_by(OutboxEvent.id)
        )
        return [(r.event, r.data) for r in rows]


async def question_events(engine: AsyncEngine, org: OrgClient, question_id: str) -> list[str]:
    return [e for e, d in await events(engine, org) if d.get("id") == question_id]


def error_code(body: dict[str, Any]) -> str:
    code: str = body["error"]["code"]
    return code


def fields(body: dict[str, Any]) -> set[str]:
    return {d["field"] for d in body["error"]["details"]}
