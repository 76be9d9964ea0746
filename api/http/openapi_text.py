"""A view's docstring as an operation's ``summary`` and ``description``.

The summary is the docstring's first whole sentence, as plain text (OpenAPI's summary is not
Markdown: its ``code`` loses the backticks); the description is the rest, as Markdown
(CommonMark, which OpenAPI allows there): reStructuredText's ````code```` becomes `code`.
"""

from __future__ import annotations

import inspect
import re

# An inline literal, reStructuredText's (double backticks) or Markdown's (single).
_CODE = re.compile(r"``(.+?)``|`([^`]+)`", re.S)
# A sentence ends at . ! or ? (after a closing bracket or quote, if any) before a space or the
# end; abbreviations do not end one.
_END = re.compile(r"[.!?][)\]\"']*(?=\s|$)")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.")


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _CODE.finditer(text)]


def first_sentence(paragraph: str) -> tuple[str, str]:
    """``paragraph`` split after its first sentence (outside inline code): (sentence, rest).
    A paragraph with no sentence end is one sentence."""
    spans = _code_spans(paragraph)
    for match in _END.finditer(paragraph):
        end = match.end()
        if any(start < match.start() < stop for start, stop in spans):
            continue
        words = paragraph[:end].split()
        if words and words[-1].lower().rstrip(")]\"'") in _ABBREVIATIONS:
            continue
        return paragraph[:end].strip(), paragraph[end:].strip()
    return paragraph.strip(), ""


def markdown(text: str) -> str:
    """reStructuredText's inline literals as Markdown's."""
    return _CODE.sub(lambda m: f"`{m.group(1) or m.group(2)}`", text)


def plain(text: str) -> str:
    """Inline literals without their backticks."""
    return _CODE.sub(lambda m: m.group(1) or m.group(2), text)


def summary_and_description(docstring: str) -> tuple[str, str]:
    """The summary (one whole sentence, plain text) and the description (everything after it,
    Markdown; empty when nothing follows) of a docstring."""
    text = inspect.cleandoc(docstring)
    first, _, others = text.partition("\n\n")
    sentence, rest = first_sentence(" ".join(first.split()))
    description = "\n\n".join(part for part in (rest, others.strip()) if part)
    return plain(sentence), markdown(description)
