"""An ``Embedder`` over any OpenAI-compatible ``POST /v1/embeddings`` endpoint (a provider, or
a self-hosted server such as text-embeddings-inference, vLLM or Ollama).

Batched (``batch_size`` texts per request), each request bounded in time (``timeout_seconds``)
and in the bytes it reads back, retried with backoff (tenacity) on a connection error, a
timeout, 429 or 5xx; any other answer is an ``EmbeddingFailed`` at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from api.answers.unit_vectors import MAX_TEXT_CHARS, unit_rows

# A float in JSON takes at most ~25 bytes: what a batch's answer may weigh, plus slack.
BYTES_PER_VALUE = 32
RESPONSE_SLACK_BYTES = 64 * 1024


class EmbeddingFailed(RuntimeError):
    """The endpoint refused the request or answered something that is not embeddings."""


class TransientEmbeddingError(RuntimeError):
    """429 or 5xx: worth another try."""


def embeddings_url(base: str) -> str:
    """``https://host/v1`` -> ``https://host/v1/embeddings`` (a URL already ending in
    ``/embeddings`` is kept)."""
    base = base.rstrip("/")
    return base if base.endswith("/embeddings") else f"{base}/embeddings"


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        url: str,
        model: str,
        dimensions: int,
        api_key: str | None = None,
        timeout_seconds: float = 10,
        languages: frozenset[str] | None = None,
        batch_size: int = 64,
        attempts: int = 3,
        backoff_seconds: float = 0.25,
    ) -> None:
        self.name = model
        self.dimensions = dimensions
        self.languages = languages
        self.url = embeddings_url(url)
        self.batch_size = batch_size
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds, connect=timeout_seconds)
        self._attempts = attempts
        self._backoff = backoff_seconds
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> aiohttp.ClientSession:
        """A session of the running loop (aiohttp sessions belong to the loop that made them)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
            self._loop = loop
        return self._session

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t[:MAX_TEXT_CHARS] for t in texts[start : start + self.batch_size]]
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self._attempts),
                wait=wait_random_exponential(multiplier=self._backoff, max=5),
                retry=retry_if_exception_type(
                    (TransientEmbeddingError, aiohttp.ClientError, asyncio.TimeoutError)
                ),
                reraise=True,
            ):
                with attempt:
                    vectors += await self._post(batch)
        return vectors

    async def _post(self, batch: list[str]) -> list[list[float]]:
        body = orjson.dumps({"model": self.name, "input": batch, "encoding_format": "float"})
        limit = len(batch) * self.dimensions * BYTES_PER_VALUE + RESPONSE_SLACK_BYTES
        async with self._client().post(self.url, data=body, headers=self._headers) as response:
            if response.status == 429 or response.status >= 500:
                raise TransientEmbeddingError(f"embeddings endpoint answered {response.status}")
            if response.status != 200:
                raise EmbeddingFailed(f"embeddings endpoint answered {response.status}")
            raw = await _read_at_most(response, limit)
        return self._vectors(raw, len(batch))

    def _vectors(self, raw: bytes, expected: int) -> list[list[float]]:
        try:
            data: list[dict[str, Any]] = orjson.loads(raw)["data"]
            ordered = sorted(data, key=lambda item: int(item["index"]))
            import numpy as np  # on first use (RSS of every API process)

            matrix = np.asarray([item["embedding"] for item in ordered], dtype=np.float32)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingFailed("the embeddings endpoint's answer is not embeddings") from exc
        if matrix.shape != (expected, self.dimensions):
            raise EmbeddingFailed(
                f"expected {expected} embeddings of {self.dimensions} values, got "
                f"{'x'.join(map(str, matrix.shape))}"
            )
        return unit_rows(matrix)

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()


async def _read_at_most(response: aiohttp.ClientResponse, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise EmbeddingFailed(f"the embeddings endpoint's answer is over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
