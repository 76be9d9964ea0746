"""Snippets: an excerpt of a title and of an answer around the words that matched, HTML-escaped,
those words wrapped in ``<mark>``.

The answer is Markdown: its text is read from markdown-it's tokens (so ``**refund**`` shows
as ``refund``, and a link's URL does not count as words), from its first ``SOURCE_CHARS``
characters only, which bounds the work for a 100,000-character answer. A word is marked when,
folded, it is a word of the query or has the stem of one. The excerpt is the window of about
``WINDOW`` characters with the most marked words, cut at word boundaries, with an ellipsis
where text was left out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from markdown_it import MarkdownIt

from api.answers.terms import stemmer_for
from api.search import fold, script_stem

WINDOW = 300
SOURCE_CHARS = 4_000
_TOKEN = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+")
_markdown = MarkdownIt("commonmark", {"html": False})


def plain_text(markdown: str) -> str:
    """The words a reader sees in the Markdown ``markdown`` (its opening), on one line."""
    parts: list[str] = []
    for block in _markdown.parse(markdown[:SOURCE_CHARS]):
        for child in block.children or ():
            if child.type in ("text", "code_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
        if block.type in ("paragraph_close", "heading_close", "list_item_close", "fence"):
            parts.append(block.content if block.type == "fence" else " ")
    return _SPACE.sub(" ", "".join(parts)).strip()


class Highlighter:
    """Marks the words of a text that match ``words`` (folded) or their stems."""

    def __init__(
        self, words: Iterable[str], locale: str | None, lexemes: Iterable[str] = ()
    ) -> None:
        self._words = {w for w in words if w}
        self._stemmer = stemmer_for(locale)
        self._stems = {self._stemmer.stemWord(w) for w in self._words} if self._stemmer else set()
        # The query's lexemes: a word of a script stemmed before folding (Arabic...) is marked
        # when its own stem is one of them ("الأموال" for a query that says "أموالي").
        self._lexemes = set(lexemes)

    def matches(self, token: str) -> bool:
        folded = fold(token)
        if folded in self._words:
            return True
        if self._lexemes:
            stems = script_stem(token)
            if stems is not None:
                return not self._lexemes.isdisjoint(stems)
        return self._stemmer is not None and self._stemmer.stemWord(folded) in self._stems

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in _TOKEN.finditer(text) if self.matches(m.group())]

    def mark(self, text: str, spans: list[tuple[int, int]] | None = None) -> str:
        """``text`` HTML-escaped with every match in ``<mark>``."""
        out: list[str] = []
        at = 0
        for start, end in self.spans(text) if spans is None else spans:
            out.append(html.escape(text[at:start]))
            out.append(f"<mark>{html.escape(text[start:end])}</mark>")
            at = end
        out.append(html.escape(text[at:]))
        return "".join(out)

    def excerpt(self, text: str, width: int = WINDOW) -> str:
        """The window of ``text`` (about ``width`` characters) with the most matches, marked."""
        if len(text) <= width:
            return self.mark(text)
        spans = self.spans(text)
        start = 0
        if spans:
            best = (-1, 0)
            right = 0
            for left, (first, _end) in enumerate(spans):
                while right < len(spans) and spans[right][1] <= first + width:
                    right += 1
                if right - left > best[0]:
                    best = (right - left, first)
            # Some words of context before the first match.
            start = max(0, best[1] - width // 6)
        if start > 0:
            space = text.rfind(" ", 0, start)
            start = space + 1 if space >= 0 else start
        end = min(len(text), start + width)
        if end < len(text):
            space = text.rfind(" ", start, end)
            end = space if space > start else end
        window = text[start:end]
        inside = [(s - start, e - start) for s, e in spans if s >= start and e <= end]
        prefix = "… " if start > 0 else ""
        suffix = " …" if end < len(text) else ""
        return f"{html.escape(prefix)}{self.mark(window, inside)}{html.escape(suffix)}"
