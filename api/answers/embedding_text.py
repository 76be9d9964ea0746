"""What is embedded for a question in one locale: its title, then the start of its answer as
plain text (Markdown syntax dropped), and the hash that tells whether it changed."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from markdown_it import MarkdownIt

# The answer's opening, in characters: a question's embedding is the average of its token
# vectors, so a long answer would drown its title; about two sentences carry the topic.
ANSWER_OPENING_CHARS = 200
# How far into the answer the third part reads (``vector_parts``): what a reader describes ("my
# phone has no SIM tray") is often said further in than the opening (session 20).
ANSWER_BODY_CHARS = 1000
# Which parts make a question's vector (``question_vectors``), in its stored hash: a change
# of the recipe makes every text's vector stale, and the backfill writes it again.
RECIPE = "title+opening+body-1000"
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
    return cut(_SPACES.sub(" ", "".join(parts)).strip(), limit)


def cut(text: str, limit: int) -> str:
    """``text``'s first ``limit`` characters, cut at a word."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return head[: head.rfind(" ")] if " " in head else head


def embedding_text(title: str, answer: str) -> str:
    """The title line, then the answer's first ``ANSWER_BODY_CHARS`` as plain text."""
    body = plain_text(answer, ANSWER_BODY_CHARS)
    return f"{title.strip()}\n{body}" if body else title.strip()


def vector_parts(text: str) -> tuple[str, str, str]:
    """What of an ``embedding_text`` is embedded: the title, the title with the answer's
    opening (``ANSWER_OPENING_CHARS``), and the whole text. A short answer's opening is the
    whole: then the two are one text."""
    title, _, body = text.partition("\n")
    opening = cut(body, ANSWER_OPENING_CHARS)
    return title, f"{title}\n{opening}" if opening else title, text


def content_hash(text: str) -> str:
    """SHA-256 of the ``RECIPE`` and what is embedded (hex): unchanged text is not embedded
    again, and a changed recipe embeds every text again."""
    return hashlib.sha256(f"{RECIPE}\n{text}".encode()).hexdigest()
