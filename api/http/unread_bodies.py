"""A response sent before its request's body was read keeps its connection honest (issue 42).

Hypercorn reads a request body only as the app asks for it. When a response ends before the
whole body arrived (a write refused before reading it: 401, 403, 413, a validation of the
path), h11 cannot start the connection's next request, and Hypercorn closes the connection
without having said so: the response carried no ``Connection: close``, so a client that pools
connections sends its next request on it and gets "Server disconnected without sending a
response" (4 of about 840 requests of an outside run, each after a refused write whose body
came in a second TCP segment).

``UnreadBodies`` (ASGI middleware around the app, inside the fast path of GETs) watches what
the app receives. At the response's start, if the body is not read whole: one of at most
``drain_bytes`` (its ``Content-Length``) is read to its end and dropped, within
``DRAIN_SECONDS``, so the connection stays usable; a longer, unsized or slower one makes the
response say ``Connection: close``, so the client opens a new connection instead of losing
a request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope, Scope

DRAIN_SECONDS = 5.0


def _content_length(scope: HTTPScope) -> int | None:
    """The request's ``Content-Length``; None when it has none (chunked) or it is unreadable."""
    for name, value in scope["headers"]:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _has_body(scope: HTTPScope) -> bool:
    for name, value in scope["headers"]:
        lowered = name.lower()
        if lowered == b"transfer-encoding" or (lowered == b"content-length" and value != b"0"):
            return True
    return False


class UnreadBodies:
    def __init__(self, inner: Any, drain_bytes: int) -> None:
        self.inner = inner
        self.drain_bytes = drain_bytes

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.inner(scope, receive, send)
            return
        finished = asyncio.Event()  # the last part of the body was received (or the client left)

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                finished.set()
            return message

        async def read_rest() -> None:
            while not finished.is_set():
                await receiving()

        async def drained() -> bool:
            """The rest of the body received within ``DRAIN_SECONDS``: by this reader, or by
            the app's own (Quart keeps reading a body into the request until it answered)."""
            reader = asyncio.ensure_future(read_rest())
            try:
                async with asyncio.timeout(DRAIN_SECONDS):
                    await finished.wait()
            except TimeoutError:
                return False
            finally:
                reader.cancel()
            return True

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start" and not finished.is_set():
                length = _content_length(scope)
                fits = length is not None and length <= self.drain_bytes
                if not (fits and await drained()):
                    headers = [*message.get("headers", ()), (b"connection", b"close")]
                    message = {**message, "headers": headers}
            await send(message)

        await self.inner(scope, receiving, sending)
