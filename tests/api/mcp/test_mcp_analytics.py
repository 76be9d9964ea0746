"""Content analytics records the searches of assistants (``search_faq``) with
``source: "mcp"``, and ``GET /analytics/searches?source=mcp`` keeps those alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from api.analytics.recording import FLUSH_SECONDS, recorder_for
from tasks.analytics import collect
from tests.api.helpcenter.helpers import enable, question
from tests.api.keys.helpers import as_key, make_public_key
from tests.api.mcp.conftest import connect, mcp_url
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow


async def searches(org: OrgClient, query: str = "") -> Any:
    r = await org.get(f"/analytics/searches{query}", scope="read")
    body = await r.get_json()
    assert r.status_code == 200, body
    return body["data"]


async def test_mcp_searches_are_recorded_with_their_source(
    app: Quart, engine: AsyncEngine, served: ApiProcess, org: OrgClient
) -> None:
    await enable(org)
    await question(org, "How do I return a quuxcoat?", "Within 30 days.")
    public = (await make_public_key(org))["key"]
    async with connect(mcp_url(served, org.slug), public) as client:
        for query in ("quuxcoat", "Quuxcoat ", "flibbertigibbet"):
            found = await client.call_tool("search_faq", {"query": query})
            assert not found.is_error, found.content
    # A reader of the org's site searches through the API too (source "api").
    r = await as_key(org, public, "GET", "/questions?q=quuxcoat", address="10.9.9.9")
    assert r.status_code == 200
    await recorder_for(app.extensions).flush()
    await asyncio.sleep(FLUSH_SECONDS * 3)  # the served process flushes its own buffer

    await collect(engine)

    mcp = await searches(org, "?source=mcp")
    assert mcp["topQueries"] == [
        {"query": "quuxcoat", "searches": 2, "clicks": 0, "clickThroughRate": 0.0},
        {"query": "flibbertigibbet", "searches": 1, "clicks": 0, "clickThroughRate": 0.0},
    ]
    assert mcp["noResults"] == [{"query": "flibbertigibbet", "searches": 1}]
    api = await searches(org, "?source=api")
    assert [(q["query"], q["searches"]) for q in api["topQueries"]] == [("quuxcoat", 1)]
    every = await searches(org)
    top = every["topQueries"][0]
    assert (top["query"], top["searches"]) == ("quuxcoat", 3)


async def test_an_unknown_source_is_refused(org: OrgClient) -> None:
    r = await org.get("/analytics/searches?source=fax", scope="read")
    assert r.status_code == 400
    body = await r.get_json()
    assert body["error"]["code"] == "validation_failed"
    assert body["error"]["details"][0]["field"] == "source"
    assert "'mcp'" in body["error"]["details"][0]["issue"]  # names the sources there are
