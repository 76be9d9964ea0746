"""What every parser is told about the import it reads for."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from api.imports.conversion import (
    CONVERT_BATCH,
    LOOKAHEAD,
    Converted,
    convert,
    converters,
    markdown_of_each,
)
from api.imports.items import Invalid, Item, Note, QuestionItem, TranslationItem
from api.imports.links import Link

__all__ = ["CONVERT_BATCH", "Note", "ParseContext", "parents_first"]


@dataclass
class _Batch:
    """Bodies sent to a converter together (once full, or when one of them is due)."""

    htmls: list[str] = field(default_factory=list)
    future: Future[list[Converted]] | None = None

    rules: str | None = None  # the format's links (``api/imports/links.py``)

    def send(self) -> Future[list[Converted]]:
        if self.future is None:
            self.future = converters().submit(markdown_of_each, self.htmls, self.rules)
        return self.future


Pending = tuple[_Batch, int, str, str, str, list[Note], list[Link] | None]


class _Unconvertible(Exception):
    def __init__(self, field: str, issue: str) -> None:
        super().__init__(issue)
        self.field, self.issue = field, issue


def _kept(
    converted: Converted, item: str, field: str, notes: list[Note], links: list[Link] | None
) -> str:
    """The Markdown of a converted body, its issues added to ``notes`` and its links to
    ``links``; ``_Unconvertible`` if it failed."""
    markdown, issues, found = converted
    if markdown is None:
        raise _Unconvertible(field, issues[0])
    notes.extend(Note(item, field, issue) for issue in issues)
    if links is not None:
        links.extend(found)
    return markdown


@dataclass(frozen=True)
class ParseContext:
    default_locale: str  # the org's: a translation into it is the resource itself
    inflate_limit: int  # bytes an archive may inflate to (``billing.plans.import_inflated_bytes``)
    convert: bool = True  # False: a syntax check only (the request's), no HTML conversion
    # True: bodies convert in the converter processes; read the items through ``resolved``.
    ahead: bool = False
    # The format whose links between its articles are rewritten (``api/imports/links.py``).
    links: str | None = None
    pending: dict[str, Pending] = field(default_factory=dict)
    _tokens: Iterator[int] = field(default_factory=itertools.count)
    _open: list[_Batch] = field(default_factory=list)  # the batch filling up
    _sent: list[int] = field(default_factory=lambda: [0])

    def batches_sent(self) -> int:
        return self._sent[0]

    def _send(self, batch: _Batch) -> Future[list[Converted]]:
        if self._open and batch is self._open[0]:
            self._open[0] = _Batch(rules=self.links)
        if batch.future is None:
            self._sent[0] += 1
        return batch.send()

    def markdown(
        self,
        html: str | None,
        item: str,
        field: str,
        notes: list[Note],
        links: list[Link] | None = None,
    ) -> str:
        """Vendor HTML as Markdown; what it loses becomes ``notes`` of the item, and its links
        to the source's other resources ``links`` (their hrefs placeholders in the Markdown).
        Ahead: a token the item holds until ``resolved`` puts the Markdown in its place."""
        if not html:
            return ""
        if not self.convert:
            return html
        if self.ahead:
            token = f"\x00html:{next(self._tokens)}"
            if not self._open:
                self._open.append(_Batch(rules=self.links))
            batch = self._open[0]
            batch.htmls.append(html)
            self.pending[token] = (batch, len(batch.htmls) - 1, html, item, field, notes, links)
            if len(batch.htmls) >= CONVERT_BATCH:
                self._send(batch)
            return token
        return _kept(convert(html, self.links), item, field, notes, links)

    def _take(self, token: str) -> str:
        batch, index, html, item, field_, notes, links = self.pending.pop(token)
        try:
            converted = self._send(batch).result()[index]
        except Exception:  # a converter process died: convert here instead
            converted = convert(html, self.links)
        return _kept(converted, item, field_, notes, links)

    def _finish(self, item: Any) -> Item:
        """The item with its Markdown; ``Invalid`` (a failed item of the report) if a body of
        it could not be converted."""
        try:
            if isinstance(item, QuestionItem) and item.answer in self.pending:
                item.answer = self._take(item.answer)
            elif isinstance(item, TranslationItem):
                for key, value in item.fields.items():
                    if isinstance(value, str) and value in self.pending:
                        item.fields[key] = self._take(value)
        except _Unconvertible as failed:
            self._drop(item)
            kind = "translations" if isinstance(item, TranslationItem) else "questions"
            return Invalid(item.source, failed.field, failed.issue, kind)
        return item  # type: ignore[no-any-return]

    def _drop(self, item: Any) -> None:
        """Forget the item's other bodies still pending (they will not be asked for)."""
        values = [item.answer] if isinstance(item, QuestionItem) else list(item.fields.values())
        for value in values:
            if isinstance(value, str):
                self.pending.pop(value, None)

    def resolved(self, items: Iterator[Item]) -> Iterator[Item]:
        """``items`` in order, each with its Markdown, read up to ``LOOKAHEAD`` ahead."""
        window: deque[Item] = deque()
        for item in items:
            window.append(item)
            if len(window) > LOOKAHEAD:
                yield self._finish(window.popleft())
        while window:
            yield self._finish(window.popleft())


MAX_CATEGORIES = 20_000  # categories of one upload (held to be ordered parents first)


def parents_first(items: list[tuple[str, str | None, object]]) -> list[object]:
    """``(source, parent source, item)`` ordered so a parent comes before its children
    (a parent not in the list, or a cycle, leaves the rest in file order)."""
    by_source = {source: (parent, item) for source, parent, item in items}
    done: set[str] = set()
    ordered: list[object] = []
    for source, _parent, _item in items:
        chain: list[str] = []
        current: str | None = source
        while current is not None and current in by_source and current not in done:
            if current in chain:
                break
            chain.append(current)
            current = by_source[current][0]
        for name in reversed(chain):
            if name not in done:
                done.add(name)
                ordered.append(by_source[name][1])
    return ordered
