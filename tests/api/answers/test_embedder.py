"""Embedders (issue 28): the OpenAI-compatible one against a real local HTTP server, the
WordLlama default loaded offline from its wheel, the query cache, the text embedded."""

from __future__ import annotations

import hashlib
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api.answers.embedder import (
    WORDLLAMA_DIMENSIONS,
    WordLlamaEmbedder,
    embedder_from_settings,
    serves,
)
from api.answers.embedding_text import content_hash, embedding_text, plain_text, vector_parts
from api.answers.openai_embedder import EmbeddingFailed, OpenAIEmbedder
from api.answers.query_embeddings import QueryEmbeddingCache, embed_query
from api.answers.question_vectors import question_vectors
from tenancy.settings import Settings
from tests.api.answers.embeddings_server import API_KEY, EmbeddingsServer, vector_of
from tests.fixtures.interpreter import offline_env, run_python


@pytest.fixture
async def server() -> AsyncIterator[EmbeddingsServer]:
    running = await EmbeddingsServer().start()
    yield running
    await running.stop()


def endpoint_embedder(server: EmbeddingsServer, **options: Any) -> OpenAIEmbedder:
    settings: dict[str, Any] = {
        "url": server.url,
        "model": "test-embed-256",
        "dimensions": 256,
        "api_key": API_KEY,
        "timeout_seconds": 2,
        "batch_size": 2,
        "backoff_seconds": 0.01,
    }
    return OpenAIEmbedder(**{**settings, **options})


def unit(values: list[float]) -> np.ndarray[Any, Any]:
    array = np.asarray(values, dtype=np.float64)
    return array / np.linalg.norm(array)


async def test_endpoint_embeddings_come_batched_in_input_order_and_unit_length(
    server: EmbeddingsServer,
) -> None:
    embedder = endpoint_embedder(server)
    texts = ["refunds", "passwords", "shipping", "accounts", "payments"]
    try:
        vectors = await embedder.embed(texts)
    finally:
        await embedder.aclose()
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert {r["model"] for r in server.requests} == {"test-embed-256"}
    assert {r["encoding_format"] for r in server.requests} == {"float"}
    for text, vector in zip(texts, vectors, strict=True):
        assert len(vector) == 256
        assert np.allclose(vector, unit(vector_of(text, 256)), atol=1e-6)


async def test_endpoint_busy_or_failing_is_retried(server: EmbeddingsServer) -> None:
    server.faults = [503, 429]
    embedder = endpoint_embedder(server)
    try:
        vectors = await embedder.embed(["refunds"])
    finally:
        await embedder.aclose()
    assert len(server.requests) == 3
    assert np.allclose(vectors[0], unit(vector_of("refunds", 256)), atol=1e-6)


@pytest.mark.parametrize("fault", [400, "wrong_size", "huge"])
async def test_a_refusal_or_a_bad_answer_fails_at_once(
    server: EmbeddingsServer, fault: int | str
) -> None:
    server.faults = [fault]
    embedder = endpoint_embedder(server)
    try:
        with pytest.raises(EmbeddingFailed):
            await embedder.embed(["refunds"])
    finally:
        await embedder.aclose()
    assert len(server.requests) == 1


async def test_a_wrong_key_is_refused(server: EmbeddingsServer) -> None:
    embedder = endpoint_embedder(server, api_key="sk-wrong")
    try:
        with pytest.raises(EmbeddingFailed, match="401"):
            await embedder.embed(["refunds"])
    finally:
        await embedder.aclose()


async def test_a_slow_endpoint_times_out_after_bounded_attempts(server: EmbeddingsServer) -> None:
    server.faults = ["slow", "slow"]
    embedder = endpoint_embedder(server, timeout_seconds=0.3, attempts=2)
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            await embedder.embed(["refunds"])
    finally:
        await embedder.aclose()
    assert len(server.requests) == 2
    assert time.monotonic() - started < 3


def test_settings_choose_the_embedder() -> None:
    assert isinstance(embedder_from_settings(Settings()), WordLlamaEmbedder)
    chosen = embedder_from_settings(
        Settings(
            faq_embeddings_url="http://127.0.0.1:9/v1/",
            faq_embeddings_model="bge-small-en",
            faq_embeddings_dimensions=384,
            faq_embeddings_languages="en, de-AT",
        )
    )
    assert isinstance(chosen, OpenAIEmbedder)
    assert (chosen.url, chosen.name, chosen.dimensions) == (
        "http://127.0.0.1:9/v1/embeddings",
        "bge-small-en",
        384,
    )
    assert serves(chosen, "de-CH") and not serves(chosen, "fr")
    with pytest.raises(RuntimeError, match="FAQ_EMBEDDINGS_DIMENSIONS"):
        embedder_from_settings(
            Settings(faq_embeddings_url="http://127.0.0.1:9/v1", faq_embeddings_model="m")
        )
    with pytest.raises(RuntimeError, match="FAQ_EMBEDDINGS_MODEL"):
        embedder_from_settings(
            Settings(faq_embeddings_url="http://127.0.0.1:9/v1", faq_embeddings_dimensions=8)
        )


OFFLINE_LOAD = textwrap.dedent(
    """
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from api.answers.embedder import WordLlamaEmbedder

    vector = WordLlamaEmbedder().embed_sync(["What is your refund policy?"])[0]
    try:
        import urllib.request
        urllib.request.urlopen("http://example.com/", timeout=1)
        print("the guard let a request through")
    except OSError:
        pass
    print(len(vector), round(sum(v * v for v in vector), 3))
    """
)


def test_wordllama_loads_from_its_wheel_without_the_network(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run_python(OFFLINE_LOAD, offline_env(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(WORDLLAMA_DIMENSIONS), "1.0"]
    assert not any(home.iterdir())  # no cache written, nothing fetched


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


async def test_wordllama_puts_a_paraphrase_near_its_question() -> None:
    embedder = WordLlamaEmbedder()
    query, refund, password, empty = await embedder.embed(
        [
            "how do I get my money back?",
            "What is your refund policy?",
            "How do I reset my password?",
            "",
        ]
    )
    assert len(query) == WORDLLAMA_DIMENSIONS
    assert abs(float(np.linalg.norm(query)) - 1) < 1e-5
    assert cosine(query, refund) > cosine(query, password) + 0.05
    assert not any(empty)  # no token, no direction: zeros, never NaN
    assert serves(embedder, "en-GB") and not serves(embedder, "de")


@pytest.mark.serial  # a bound on time: run with the machine to itself
def test_a_query_embedding_costs_well_under_2_ms_of_cpu() -> None:
    embedder = WordLlamaEmbedder()
    embedder.embed_sync(["warm up"])
    queries = [f"how do I get my money back after {i} days?" for i in range(300)]
    started = time.process_time()
    for query in queries:
        embedder.embed_sync([query])
    per_query_ms = (time.process_time() - started) / len(queries) * 1000
    assert per_query_ms <= 2, per_query_ms


def test_the_query_cache_is_bounded_by_bytes_least_recently_used_first() -> None:
    vector = [0.5] * 256  # 1,024 bytes as float32
    cache = QueryEmbeddingCache(max_bytes=3 * (1024 + 200 + 20))
    for text in ("query one", "query two", "query three"):
        cache.put("model", text, vector)
    assert len(cache) == 3
    assert cache.get("model", "query one") == vector  # now the most recently used
    cache.put("model", "query four", vector)
    assert cache.get("model", "query two") is None  # the least recently used went
    assert cache.get("model", "query one") == vector
    assert cache.get("other-model", "query one") is None
    assert cache.bytes <= cache.max_bytes
    QueryEmbeddingCache(max_bytes=100).put("model", "too big for it", vector)


async def test_a_repeated_query_is_embedded_once(server: EmbeddingsServer) -> None:
    embedder = endpoint_embedder(server)
    cache = QueryEmbeddingCache(max_bytes=1 << 20)
    try:
        first = await embed_query("How do I get  my money back?", embedder, cache)
        again = await embed_query(" How do I get my money back? ", embedder, cache)
    finally:
        await embedder.aclose()
    assert len(server.requests) == 1
    assert server.requests[0]["input"] == ["How do I get my money back?"]
    assert np.allclose(first, again, atol=1e-6)


def test_what_is_embedded_is_the_title_and_the_plain_start_of_the_answer() -> None:
    answer = (
        "Refunds are paid **within 30 days** of a [purchase](https://example.com/terms).\n\n"
        "Use `refund-form` <b>online</b>. " + "More words follow here. " * 60
    )
    opening = plain_text(answer, 200)
    assert opening.startswith("Refunds are paid within 30 days of a purchase. Use refund-form")
    assert "**" not in opening and "https://" not in opening and "<b>" not in opening
    assert len(opening) <= 200
    body = plain_text(answer, 1000)
    assert body.startswith(opening) and 900 < len(body) <= 1000
    text = embedding_text("What is your refund policy? ", answer)
    assert text.split("\n") == ["What is your refund policy?", body]
    assert vector_parts(text) == (
        "What is your refund policy?",
        f"What is your refund policy?\n{opening}",
        text,
    )
    assert content_hash(text) == content_hash(embedding_text("What is your refund policy?", answer))
    assert content_hash(text) != content_hash(embedding_text("What is your refund policy?", "No."))
    # The recipe is in the hash: vectors made another way are stale, whatever their text.
    assert content_hash(text) != hashlib.sha256(text.encode()).hexdigest()


async def test_a_question_vector_is_the_sum_of_its_parts_each_embedded_once(
    server: EmbeddingsServer,
) -> None:
    long_answer = "Open Settings, then Billing. " + "Your card is charged monthly. " * 20
    texts = [embedding_text("Refunds", long_answer), embedding_text("Passwords", "Reset it.")]
    embedder = endpoint_embedder(server, batch_size=64)
    try:
        vectors = await question_vectors(embedder, texts)
    finally:
        await embedder.aclose()
    long_parts, short_parts = vector_parts(texts[0]), vector_parts(texts[1])
    assert len(set(long_parts)) == 3 and short_parts == ("Passwords", texts[1], texts[1])
    # One request: the long answer's three parts, the short one's title and text (its opening
    # is its whole answer).
    assert [sorted(r["input"]) for r in server.requests] == [
        sorted([*long_parts, "Passwords", texts[1]])
    ]
    for parts, vector in zip((long_parts, short_parts), vectors, strict=True):
        summed = sum(unit(vector_of(part, 256)) for part in parts)
        assert np.allclose(vector, summed / np.linalg.norm(summed), atol=1e-5)
