"""The MCP tests talk to a real API process (``faq serve``) with the SDK's own client
(``mcp.client.streamable_http``); orgs, keys and content are made through the in-process app
(same PostgreSQL and Redis)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.fixtures.bounded import ApiProcess, api_process

# A raw JSON-RPC initialize (2025-11-25) and the Accept it needs, for requests made without
# the SDK's client (status codes, headers).
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="session")
def served() -> Iterator[ApiProcess]:
    """One ``faq serve`` for the MCP tests."""
    with api_process() as api:
        yield api


def headers(key: str | None, **extra: str) -> dict[str, str]:
    sent = dict(extra)
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    return sent


@asynccontextmanager
async def connect(
    url: str,
    key: str | None,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    mode: str = "legacy",
    **extra: str,
) -> AsyncIterator[Client]:
    """The SDK's client, initialized (``mode="legacy"``: the initialize handshake of the
    2025-11-25 specification), sending ``key`` as a Bearer token."""
    kwargs: dict[str, Any] = {"headers": headers(key, **extra), "timeout": 30}
    if transport is not None:
        kwargs["transport"] = transport
    async with (
        httpx2.AsyncClient(**kwargs) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def mcp_url(api: ApiProcess, org_slug: str) -> str:
    return f"{api.base_url}/mcp/{org_slug}"
