"""Embedders: text in, unit-length vectors out (issue 28; docs/answers.md "Embeddings").

Two implementations of ``Embedder``: ``WordLlamaEmbedder``, the default, whose 256-dimension
weights and tokenizer ship inside the ``wordllama`` wheel and are loaded from that package's
folder with downloads disabled (nothing is fetched, ever), and ``OpenAIEmbedder``
(``api/answers/openai_embedder.py``) for any OpenAI-compatible ``/v1/embeddings`` endpoint.
``embedder_from_settings`` picks one; ``current_embedder`` is the process's, made once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from api.answers.unit_vectors import MAX_TEXT_CHARS, unit_rows
from tenancy.settings import Settings, get_settings

WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIMENSIONS = 256
WORDLLAMA_MODEL = f"wordllama-{WORDLLAMA_CONFIG}-{WORDLLAMA_DIMENSIONS}"


@runtime_checkable
class Embedder(Protocol):
    """``name`` is the model id stored with each vector; ``languages`` the primary language
    subtags it embeds well (None: every language)."""

    name: str
    dimensions: int
    languages: frozenset[str] | None

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text (all zeros for a text with no known token)."""
        ...

    async def aclose(self) -> None: ...


def serves(embedder: Embedder, locale: str) -> bool:
    """Whether ``embedder`` embeds text of ``locale`` (a BCP 47 tag) well."""
    return embedder.languages is None or locale.split("-")[0].lower() in embedder.languages


def wordllama_folder() -> Path:
    """The installed ``wordllama`` package's folder, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the wordllama package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def load_wordllama() -> Any:
    """The WordLlama model from the files its wheel ships (blocking: about half a second).

    ``disable_download=True`` and the package folder as the cache: a missing file is a
    FileNotFoundError, never a download. Importing ``wordllama.inference`` calls
    ``logging.basicConfig``; the root logger is put back as it was, so the service's own
    logging set-up (``tenancy/logging.py``) stays in charge."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        from wordllama import WordLlama
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return WordLlama.load(
        config=WORDLLAMA_CONFIG,
        dim=WORDLLAMA_DIMENSIONS,
        cache_dir=wordllama_folder(),
        disable_download=True,
    )


def one_blas_thread() -> None:
    """numpy's BLAS computes with one thread in this process (OpenBLAS starts one per core).
    A process here runs many requests or messages at once, each embedding a short text: with
    a thread per core, each product woke every core and the threads spun waiting for each
    other (a query's USE embedding took twice the CPU; four at once, a p95 of 351 ms against
    18.6 ms: ``make bench``'s embeddings row, docs/performance.md, session 19). Called when a
    model loads (``threadpoolctl`` limits the BLAS libraries loaded: numpy's, by then)."""
    import numpy  # noqa: F401  (its BLAS library loaded, so that the limit reaches it)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


class LocalModelEmbedder(ABC):
    """An ``Embedder`` over a model shipped in a pip package: loaded once, on its first text
    (blocking, in the thread that asks), and its CPU work run in a thread. A subclass says
    how to load it (``_load``) and how it turns clipped texts into rows (``_rows``)."""

    name: str
    dimensions: int
    languages: frozenset[str] | None

    def __init__(self, model: Any | None = None) -> None:
        self._model = model
        self._lock = threading.Lock()

    @abstractmethod
    def _load(self) -> Any:
        """The model, loaded from its package (called once, under the lock)."""

    @abstractmethod
    def _rows(self, model: Any, texts: list[str]) -> Any:
        """A row per text (clipped already), any array-like of floats."""

    def model(self) -> Any:
        """The loaded model (blocking the first time)."""
        with self._lock:
            if self._model is None:
                self._model = self._load()
                one_blas_thread()
            return self._model

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        matrix = self._rows(self.model(), [text[:MAX_TEXT_CHARS] for text in texts])
        import numpy as np  # loaded with the model, not with the API (RSS of every process)

        return unit_rows(np.asarray(matrix, dtype=np.float32).reshape(len(texts), -1))

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_sync, list(texts))

    async def aclose(self) -> None:
        return None


class WordLlamaEmbedder(LocalModelEmbedder):
    """WordLlama (MIT; the token embeddings of Llama 2 70B distilled, English): the average
    of a text's token vectors. Loaded once per process; the CPU work runs in a thread."""

    name = WORDLLAMA_MODEL
    dimensions = WORDLLAMA_DIMENSIONS
    languages: frozenset[str] | None = frozenset({"en"})

    def _load(self) -> Any:
        return load_wordllama()

    def _rows(self, model: Any, texts: list[str]) -> Any:
        return model.embed(texts, norm=False, batch_size=64)


def configured_languages(settings: Settings) -> frozenset[str] | None:
    tags = {t.strip().split("-")[0].lower() for t in settings.faq_embeddings_languages.split(",")}
    tags.discard("")
    return frozenset(tags) or None


def configured_model_name(settings: Settings | None = None) -> str:
    """The model id the settings choose (what ``embedder_from_settings`` would build), known
    without loading anything."""
    settings = settings or get_settings()
    if settings.faq_embeddings_url:
        if not settings.faq_embeddings_model:
            raise RuntimeError("FAQ_EMBEDDINGS_URL is set but FAQ_EMBEDDINGS_MODEL is not")
        return settings.faq_embeddings_model
    return WORDLLAMA_MODEL


def embedder_from_settings(settings: Settings | None = None) -> Embedder:
    """``OpenAIEmbedder`` when ``FAQ_EMBEDDINGS_URL`` is set (with its model and dimensions,
    both required), else ``WordLlamaEmbedder``. Nothing is loaded or connected here."""
    settings = settings or get_settings()
    if not settings.faq_embeddings_url:
        return WordLlamaEmbedder()
    from api.answers.openai_embedder import OpenAIEmbedder

    if not settings.faq_embeddings_dimensions:
        raise RuntimeError("FAQ_EMBEDDINGS_URL is set but FAQ_EMBEDDINGS_DIMENSIONS is not")
    key = settings.faq_embeddings_api_key
    return OpenAIEmbedder(
        url=settings.faq_embeddings_url,
        model=configured_model_name(settings),
        dimensions=settings.faq_embeddings_dimensions,
        api_key=key.get_secret_value() if key else None,
        timeout_seconds=settings.faq_embeddings_timeout_seconds,
        languages=configured_languages(settings),
    )


_process_embedder: list[Embedder] = []
_process_lock = threading.Lock()


def current_embedder() -> Embedder:
    """This process's embedder (made on first use from the settings; not loaded yet)."""
    with _process_lock:
        if not _process_embedder:
            _process_embedder.append(embedder_from_settings())
        return _process_embedder[0]
