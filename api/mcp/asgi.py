"""``/mcp/{org}``: the MCP endpoint (Streamable HTTP, MCP specification 2025-11-25), ASGI
middleware in front of Quart, served by the same Hypercorn processes as the API.

- Stateless: every POST carries one JSON-RPC message and gets one JSON answer
  (``StreamableHTTPSessionManager(stateless=True, json_response=True)``); no session lives in a
  process, so any API process answers any message of a client (no sticky sessions). GET (a
  server-to-client stream) and DELETE (ending a session) are 405: there are no sessions.
- Before the SDK sees a message: the key (``api.mcp.auth``: 401, 404 ``org_not_found``,
  429 per key), then the ``Origin`` rule below; errors in the API's shape
  (``{"error": {"code", "message", "details"}}``).
- CORS as for publishable keys (``api.http.cors``): a publishable key's answer carries
  ``Access-Control-Allow-Origin`` when the key lists the ``Origin``; a preflight gets the CORS
  headers when some active publishable key of the org lists it. An ``Origin`` the key does not
  allow (any ``Origin`` with a secret key) is 403 ``origin_not_allowed``, as the MCP
  specification asks of servers (DNS rebinding)."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator, MutableMapping
from typing import Any

import orjson
import structlog
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from quart import Quart

from api.errors import MethodNotAllowed, ServiceError, ServiceUnavailable
from api.http.binding import Tenancy
from api.http.observability import bind_request_id, observe, request_id_for
from api.mcp.auth import authenticate
from api.mcp.server import CALLER, build
from tenancy.settings import Settings

log = structlog.get_logger(__name__)

PATH = re.compile(r"^/mcp/([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)/?$")
ALLOW_METHODS = "POST"
ROUTE = "/mcp/<org_slug>"  # the metrics' route label
ALLOW_HEADERS = "Authorization, Content-Type, Accept, Mcp-Protocol-Version"
MAX_AGE = "600"
Scope = dict[str, Any]


class OriginNotAllowed(ServiceError):
    status = 403
    code = "origin_not_allowed"
    message = "Requests from this Origin are not allowed with this key."


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _answer(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _error(send: Any, error: ServiceError, extra: list[tuple[bytes, bytes]]) -> None:
    headers = [(b"content-type", b"application/json"), *extra]
    headers += [(k.lower().encode(), v.encode()) for k, v in error.headers.items()]
    await _answer(send, error.status, orjson.dumps(error.body()), headers)


class McpEndpoint:
    """ASGI middleware: ``/mcp/{org}`` goes to the MCP server, everything else to ``inner``."""

    def __init__(self, inner: Any, app: Quart, manager: StreamableHTTPSessionManager) -> None:
        self.inner = inner
        self.app = app
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        matched = PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if matched is None:
            await self.inner(scope, receive, send)
            return
        # As every response of the API: an X-Request-Id, the metrics and the access log line.
        request_id = request_id_for(_header(scope, b"x-request-id") or "")
        bind_request_id(request_id)
        started = time.perf_counter()
        status = 500
        extra: list[tuple[bytes, bytes]] = [(b"x-request-id", request_id.encode("latin-1"))]

        async def reply(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            await self._serve(scope, receive, reply, matched.group(1), extra)
        finally:
            elapsed = time.perf_counter() - started
            observe(scope["method"], ROUTE, status, elapsed)

    async def _serve(
        self, scope: Scope, receive: Any, send: Any, slug: str, extra: list[tuple[bytes, bytes]]
    ) -> None:
        origin = _header(scope, b"origin")
        method = scope["method"]
        if method == "OPTIONS":
            await self._preflight(send, slug, origin)
            return
        vary = [(b"vary", b"Origin")]
        try:
            caller = await authenticate(self.app, scope, slug)
        except ServiceError as error:
            await _error(send, error, vary + await self._cors(slug, origin))
            return
        except Exception as error:  # PostgreSQL unreachable: a clean 503
            log.warning("mcp_auth_unavailable", error=type(error).__name__)
            await _error(send, ServiceUnavailable(headers={"Retry-After": "1"}), vary)
            return
        allowed = caller.public and origin is not None and origin in caller.allowed_origins
        cors = [(b"access-control-allow-origin", origin.encode())] if allowed and origin else []
        if origin is not None and not allowed:
            await _error(send, OriginNotAllowed(), vary)
            return
        if method != "POST":
            await _error(send, MethodNotAllowed(headers={"Allow": "POST, OPTIONS"}), vary + cors)
            return
        scope[CALLER] = caller
        extra += [(k.lower().encode(), v.encode()) for k, v in caller.rate_headers.items()]
        if caller.public:
            extra += vary + cors
        await self.manager.handle_request(scope, receive, send)

    async def _org_allows(self, slug: str, origin: str | None) -> bool:
        if origin is None:
            return False
        ext: Tenancy = self.app.extensions["tenancy"]
        try:
            org = await ext.directory.org(slug)
            return org is not None and origin in await ext.directory.public_origins(org.id)
        except Exception:  # PostgreSQL unreachable: no CORS headers
            log.warning("mcp_cors_origins_unavailable", exc_info=True)
            return False

    async def _cors(self, slug: str, origin: str | None) -> list[tuple[bytes, bytes]]:
        """The CORS header of an answer given before a valid key was seen (the org's public
        keys decide, as for a preflight)."""
        if origin is not None and await self._org_allows(slug, origin):
            return [(b"access-control-allow-origin", origin.encode())]
        return []

    async def _preflight(self, send: Any, slug: str, origin: str | None) -> None:
        headers = [(b"vary", b"Origin"), (b"allow", b"POST, OPTIONS")]
        if origin is not None and await self._org_allows(slug, origin):
            headers += [
                (b"access-control-allow-origin", origin.encode()),
                (b"access-control-allow-methods", ALLOW_METHODS.encode()),
                (b"access-control-allow-headers", ALLOW_HEADERS.encode()),
                (b"access-control-max-age", MAX_AGE.encode()),
            ]
        await _answer(send, 204, b"", headers)


def install(app: Quart, settings: Settings) -> None:
    """Mount ``/mcp/{org}`` in front of the app and run the SDK's session manager while the
    app serves (its task group lives in the lifespan task, as the SDK requires)."""
    manager = StreamableHTTPSessionManager(
        build(app),
        stateless=True,
        json_response=True,
        max_request_body_size=settings.faq_max_body_bytes,
    )

    @app.while_serving
    async def run_mcp() -> AsyncGenerator[None, None]:
        async with manager.run():
            yield

    app.asgi_app = McpEndpoint(app.asgi_app, app, manager)  # type: ignore[method-assign,assignment]
