"""Helpers of the org audit log tests: relay the org's outbox (as the worker would) and read
``GET /audit``."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from tasks.relay import relay_org
from tests.fixtures.orgs import OrgClient


async def relay(engine: AsyncEngine, org: OrgClient) -> int:
    """Move the org's outbox on now (what ``outbox.relay`` does in the worker): its ``audit``
    events become entries."""
    return await relay_org(engine, org.info.id)


async def audit_page(org: OrgClient, **query: Any) -> dict[str, Any]:
    r = await org.get("/audit", query=query, scope="admin")
    assert r.status_code == 200, await r.get_data()
    body: dict[str, Any] = await r.get_json()
    return body


async def relayed_audit(engine: AsyncEngine, org: OrgClient, **query: Any) -> list[dict[str, Any]]:
    """Relay the org's outbox, then the first page of its audit log (newest first)."""
    await relay(engine, org)
    entries: list[dict[str, Any]] = (await audit_page(org, **query))["data"]
    return entries
