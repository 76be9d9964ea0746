"""The reference: a bare Quart app under Hypercorn (one worker, as ``faq serve``) that returns
the very bytes the service returned, from memory. ``python -m bench.reference_app DIR PORT``
serves ``GET /r/<name>`` with the content of ``DIR/<name>.json`` and ``POST /r/<name>`` with
201 and the same bytes (the body is read, not parsed).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from hypercorn.asyncio import serve
from hypercorn.config import Config
from quart import Quart, Response, request


def create_app(bodies: dict[str, bytes]) -> Quart:
    app = Quart("reference")

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b'{"status":"ok"}', content_type="application/json")

    @app.get("/r/<name>")
    async def read(name: str) -> Response:
        return Response(bodies[name], content_type="application/json")

    @app.post("/r/<name>")
    async def write(name: str) -> Response:
        await request.get_data()
        return Response(bodies[name], status=201, content_type="application/json")

    return app


def serve_on(app: Quart, port: int) -> None:
    """``app`` under Hypercorn on 127.0.0.1:``port``, one worker, no access log (as ``faq
    serve`` runs the service)."""
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    asyncio.run(serve(app, config))  # type: ignore[arg-type]


def main(argv: list[str]) -> None:
    folder, port = Path(argv[0]), int(argv[1])
    serve_on(create_app({p.stem: p.read_bytes() for p in folder.glob("*.json")}), port)


if __name__ == "__main__":
    main(sys.argv[1:])
