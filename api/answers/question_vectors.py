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

import numpy as np

from api.answers.embedder import Embedder
from api.answers.embedding_text import vector_parts


async def question_vectors(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """The vector of each question whose ``embedding_text`` is in ``texts`` (one batch; a
    text two parts share is embedded once)."""
    if not texts:
        return []
    parts = [vector_parts(t) for t in texts]
    unique = list(dict.fromkeys(p for three in parts for p in three))
    embedded = await embedder.embed(unique)
    vector = {t: np.asarray(v, dtype=np.float32) for t, v in zip(unique, embedded, strict=True)}
    summed = np.stack([vector[a] + vector[b] + vector[c] for a, b, c in parts])
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    unit = np.divide(summed, norms, out=np.zeros_like(summed), where=norms > 0)
    return [row.tolist() for row in unit]
