"""A real HTTP server speaking OpenAI's ``POST /v1/embeddings`` (aiohttp), for the tests of
``OpenAIEmbedder``: deterministic vectors (a hash of each input), answers in shuffled order
(clients must sort by ``index``), and faults on demand (statuses, slowness, wrong sizes)."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiohttp import web

API_KEY = "sk-test-embeddings"


def vector_of(text: str, dimensions: int) -> list[float]:
    """A fixed pseudo-random vector per text (not unit length: the client normalises)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    values: list[float] = (np.random.default_rng(seed).standard_normal(dimensions) * 3).tolist()
    return values


@dataclass
class EmbeddingsServer:
    dimensions: int = 256
    requests: list[dict[str, Any]] = field(default_factory=list)
    faults: list[int | str] = field(default_factory=list)  # next answers: a status or a mode
    runner: web.AppRunner | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        body = await request.json()
        self.requests.append(body)
        fault = self.faults.pop(0) if self.faults else None
        if isinstance(fault, int):
            return web.json_response({"error": {"message": "fault"}}, status=fault)
        if fault == "slow":
            await asyncio.sleep(5)
        dimensions = self.dimensions + (1 if fault == "wrong_size" else 0)
        inputs = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": vector_of(text, dimensions)}
            for i, text in enumerate(inputs)
        ]
        if fault == "huge":
            data[0]["embedding"] = [0.5] * (dimensions * 200)
        data.reverse()
        return web.json_response(
            {"object": "list", "data": data, "model": body["model"], "usage": {}}
        )

    async def start(self) -> EmbeddingsServer:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
