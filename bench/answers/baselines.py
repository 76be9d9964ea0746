"""The baselines /answers is measured against, in-process over the same FAQ: BM25 (``bm25s``,
English stopwords and Snowball stems, over title and answer), WordLlama's cosine over titles
alone (the 256-dimension model its wheel ships, downloads disabled) and a naive reciprocal rank
fusion of the two. Each is a synchronous ``text -> [(entry id, score, False), ...]``; the
``confident`` flag is set afterwards by a threshold (``bench.answers_quality.thresholded``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from bench.answers_quality import Entry, Ranked

DEPTH = 5  # items each baseline returns
RRF_K = 60  # the usual constant of reciprocal rank fusion
RRF_DEPTH = 20  # ranks fused from each list


def load_wordllama() -> Any:
    """WordLlama from the files its wheel ships (the package folder as the cache, where its
    tokenizer is found): ``disable_download`` makes a missing file an error, never a download.
    Its import calls ``logging.basicConfig``: undone."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        from wordllama import WordLlama
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    import wordllama

    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


class Bm25:
    def __init__(self, entries: Sequence[Entry]) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._ids = [e.id for e in entries]
        corpus = [f"{e.title}\n{e.answer}" for e in entries]
        tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=self._stemmer, show_progress=False)
        self._index = bm25s.BM25()
        self._index.index(tokens, show_progress=False)

    def scores(self, text: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        tokens = self._bm25s.tokenize(
            [text], stopwords="en", stemmer=self._stemmer, show_progress=False, return_ids=False
        )[0]
        if not tokens:
            return np.zeros(len(self._ids))
        return np.asarray(self._index.get_scores(tokens), dtype=np.float64)

    def __call__(self, text: str) -> Ranked:
        s = self.scores(text)
        order = np.argsort(-s, kind="stable")[:DEPTH]
        return [(self._ids[i], float(s[i]), False) for i in order if s[i] > 0]


class TitleCosine:
    def __init__(self, entries: Sequence[Entry], model: Any) -> None:
        self._model = model
        self._ids = [e.id for e in entries]
        self._titles = model.embed([e.title for e in entries], norm=True)

    def scores(self, text: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        q = self._model.embed([text], norm=True)[0]
        return np.asarray(self._titles @ q, dtype=np.float64)

    def __call__(self, text: str) -> Ranked:
        s = self.scores(text)
        order = np.argsort(-s, kind="stable")[:DEPTH]
        return [(self._ids[i], float(s[i]), False) for i in order]


class NaiveFusion:
    """Reciprocal rank fusion of BM25 and the title cosine, score scaled to 0..1 (1 when both
    rank the entry first)."""

    def __init__(self, bm25: Bm25, cosine: TitleCosine) -> None:
        self._parts: list[Callable[[str], np.ndarray[Any, np.dtype[np.float64]]]] = [
            bm25.scores,
            cosine.scores,
        ]
        self._ids = cosine._ids

    def __call__(self, text: str) -> Ranked:
        fused: dict[int, float] = {}
        for scores in (part(text) for part in self._parts):
            order = [i for i in np.argsort(-scores, kind="stable")[:RRF_DEPTH] if scores[i] > 0]
            for rank, i in enumerate(order, 1):
                fused[int(i)] = fused.get(int(i), 0.0) + 1.0 / (RRF_K + rank)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:DEPTH]
        top = 2.0 / (RRF_K + 1)
        return [(self._ids[i], s / top, False) for i, s in best]


def build_baselines(entries: Sequence[Entry]) -> dict[str, Callable[[str], Ranked]]:
    bm25 = Bm25(entries)
    cosine = TitleCosine(entries, load_wordllama())
    return {
        "BM25 (title+answer)": bm25,
        "WordLlama cosine (titles)": cosine,
        "naive RRF (BM25+WordLlama)": NaiveFusion(bm25, cosine),
    }
