"""What is embedded for a question in one locale: its title, then the opening of its answer
as plain text (Markdown syntax dropped), and the hash that tells whether it changed."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from markdown_it import MarkdownIt

# The answer's opening, in characters: a question's embedding is the average of its token
# vectors, so a long answer would drown its title; about two sentences carry the topic.
ANSWER_OPENING_CHARS = 200
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def plain_text(markdown: str, limit: int) -> str:
    """The first ``limit`` characters (cut at a word) of the text of ``markdown``: inline
    text and code, without markup, link targets or HTML."""
    parts: list[str] = []
    size = 0
    # Parsing is linear; the answer is cut first so a long one costs no more than its start.
    for token in _markdown().parse(markdown[: limit * 4]):
        if token.type != "inline" or not token.children:
            continue
        for child in token.children:
            if child.type in ("text", "code_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
        parts.append(" ")
        size += len(token.content)
        if size > limit:
            break
    text = _SPACES.sub(" ", "".join(parts)).strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def embedding_text(title: str, answer: str) -> str:
    opening = plain_text(answer, ANSWER_OPENING_CHARS)
    return f"{title.strip()}\n{opening}" if opening else title.strip()


def content_hash(text: str) -> str:
    """SHA-256 of what is embedded (hex): unchanged text is not embedded again."""
    return hashlib.sha256(text.encode()).hexdigest()
