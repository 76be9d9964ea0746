"""The MCP server (the SDK's low-level ``Server``): one for the app, every org's. Each message
reaches it through ``api.mcp.asgi``, which authenticated the request and left its ``Caller``
in the ASGI scope; the handlers act for that caller only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from quart import Quart

from api.analytics import recording
from api.http.org_inflight import for_app as org_inflight
from api.mcp import resources, tools
from api.mcp.auth import Caller

CALLER = "faq.mcp.caller"  # the ASGI scope's key of the authenticated caller
SOURCE = "mcp"  # content analytics' source of these searches
INSTRUCTIONS = (
    "The FAQ of one organization. To answer a person's question, call search_faq with their "
    "words, then get_question for the full answer of a confident result, and cite its URL. "
    "Each published answer is also a resource faq://{org}/questions/{slug} (Markdown)."
)


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    caller = request.scope.get(CALLER) if request is not None else None
    if not isinstance(caller, Caller):
        raise MCPError(types.INTERNAL_ERROR, "This request was not authenticated.")
    return caller


def record_search(app: Quart, caller: Caller, query: str, locale: str, results: int) -> None:
    """An assistant's search (content analytics, ``source: "mcp"``): buffered, no I/O here."""
    normalised = recording.normalise_query(query)
    if not normalised or not recording.enabled(app.extensions):
        return
    raw = recording.api_visitor(caller.principal.key_fingerprint, caller.address)
    visitor, at = recording.stamp(app.extensions, caller.org.id, raw)
    recording.recorder_for(app.extensions).search(
        caller.org.id,
        source=SOURCE,
        locale=locale,
        query=normalised,
        visitor=visitor,
        at=at,
        results=results,
        audiences=recording.audiences_of(caller.principal),
    )


BUSY = "Too many requests of this organization are in progress; retry in a second."


@asynccontextmanager
async def org_share(app: Quart, caller: Caller, write: bool) -> AsyncIterator[bool]:
    """A place in the org's share of this process (``api.http.org_inflight``, as API requests
    take one); yields False when the share stayed full."""
    budgets = org_inflight(app.extensions)
    slot = await budgets.acquire(caller.org.id, "POST" if write else "GET")
    try:
        yield slot is not None
    finally:
        if slot is not None:
            budgets.release(slot)


def build(app: Quart) -> Server[Any]:
    def engine() -> Any:
        return app.extensions["tenancy"].engine

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listed(caller_of(ctx)))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = caller_of(ctx)
        async with org_share(app, caller, params.name == "create_draft") as admitted:
            if not admitted:
                return tools.problem(BUSY)
            found = await tools.call(engine(), caller, params.name, params.arguments)
        data = found.structured_content
        if params.name == "search_faq" and not found.is_error and isinstance(data, dict):
            query = str((params.arguments or {}).get("query", ""))
            record_search(app, caller, query, data["locale"], len(data["results"]))
        return found

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        caller = caller_of(ctx)
        async with org_share(app, caller, False) as admitted:
            if not admitted:
                raise MCPError(types.INTERNAL_ERROR, BUSY)
            return await resources.listing(engine(), caller, cursor)

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[resources.template(caller_of(ctx))]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        caller = caller_of(ctx)
        async with org_share(app, caller, False) as admitted:
            if not admitted:
                raise MCPError(types.INTERNAL_ERROR, BUSY)
            return await resources.read(engine(), caller, params.uri)

    return Server(
        "faq",
        version="1.0.0",
        title="FAQ",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
