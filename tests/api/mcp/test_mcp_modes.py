"""The SDK's client in its default mode (``auto``: it probes for the newer per-request
protocol, else falls back to the initialize handshake) works too."""

from __future__ import annotations

from tests.api.helpcenter.helpers import enable, question
from tests.api.mcp.conftest import connect, mcp_url
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient


async def test_the_clients_default_mode_works(served: ApiProcess, org: OrgClient) -> None:
    await enable(org)
    made = await question(org, "Can I pay with snorkelbucks?", "Yes.")
    async with connect(mcp_url(served, org.slug), org.keys["read"], mode="auto") as client:
        assert client.protocol_version in ("2025-11-25", "2026-07-28")
        found = await client.call_tool("search_faq", {"query": "snorkelbucks"})
        assert not found.is_error, found.content
        assert [r["slug"] for r in found.structured_content["results"]] == [made["slug"]]
