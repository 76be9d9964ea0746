"""A question's vector: the embedding of its title plus the embedding of its title with the
opening of its answer (``embedding_text``), scaled to unit length.

Measured on the dev half of the evaluation set (``bench/answers``, docs/answers.md): the
title alone found the right question first for 78% of readers' questions, the title with the
answer's opening for 69% (the answer's words dilute the topic), their sum for 80%, and the
sum fused with the lexical leg for 83%. The sum is one vector, so one HNSW search serves it:
its cosine with a query is, up to the vector's length, the mean of the two cosines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from api.answers.embedder import Embedder


def title_of(text: str) -> str:
    """The title line of an ``embedding_text``."""
    return text.split("\n", 1)[0]


async def question_vectors(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """The vector of each question whose ``embedding_text`` is in ``texts`` (one batch)."""
    if not texts:
        return []
    both = await embedder.embed([*(title_of(t) for t in texts), *texts])
    titles = np.asarray(both[: len(texts)], dtype=np.float32)
    whole = np.asarray(both[len(texts) :], dtype=np.float32)
    summed = titles + whole
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    unit = np.divide(summed, norms, out=np.zeros_like(summed), where=norms > 0)
    return [row.tolist() for row in unit]
