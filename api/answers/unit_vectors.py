"""What every embedder shares: the longest text it embeds, and scaling rows to unit length."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is loaded by the embedders on first use, not with the API
    import numpy as np
    from numpy.typing import NDArray

# Longest text embedded, in characters (the embedded text is a title and an answer's
# opening, a query at most 500): a bound on the tokenizer's work and memory per text.
MAX_TEXT_CHARS = 2_000


def unit_rows(matrix: NDArray[np.float32]) -> list[list[float]]:
    """Rows scaled to length 1 (a zero row stays zero: no NaN reaches PostgreSQL)."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scaled = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    rows: list[list[float]] = scaled.tolist()
    return rows
