"""A question's vector: the sum of the embeddings of its title, of its title with the opening
of its answer, and of its title with the answer's first 1,000 characters
(``embedding_text.vector_parts``), scaled to unit length.

Measured on the dev half of the evaluation set (``bench/answers``, docs/answers.md): the
title alone found the right question first for 78% of readers' questions, the title with the
answer's opening for 69% (the answer's words dilute the topic), their sum for 80%, and the
sum fused with the lexical leg for 83%. Support questions describe a situation an answer
often names further in than its opening: the third part raised each model's cosine alone by
2 to 15 points of P@1 on the support and XQuAD-R sets, and cost StackFAQ's title-like
questions about one (session 20, docs/answers.md). The sum is one vector, so one HNSW search
serves it: its cosine with a query is, up to the vector's length, the mean of the parts'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from api.answers.embedder import Embedder
from api.answers.embedding_text import vector_parts


async def question_vectors(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """The vector of each question whose ``embedding_text`` is in ``texts`` (one batch; a
    text two parts share is embedded once)."""
    if not texts:
        return []
    parts = [vector_parts(t) for t in texts]
    unique = distinct(parts)
    return [row.tolist() for row in unit_sums(parts, await embedder.embed(unique), unique)]


def distinct(parts: Sequence[tuple[str, ...]]) -> list[str]:
    """Every text of ``parts`` once, in order."""
    return list(dict.fromkeys(p for texts in parts for p in texts))


def unit_sums(
    parts: Sequence[tuple[str, ...]], embedded: Sequence[Sequence[float]], unique: Sequence[str]
) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Each question's sum of its parts' vectors (``embedded[i]`` is ``unique[i]``'s), scaled
    to unit length: one row per question."""
    vector = {t: np.asarray(v, dtype=np.float32) for t, v in zip(unique, embedded, strict=True)}
    summed = np.stack([np.sum([vector[p] for p in texts], axis=0) for texts in parts])
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    unit: np.ndarray[Any, np.dtype[np.float32]] = np.divide(
        summed, norms, out=np.zeros_like(summed), where=norms > 0
    )
    return unit
