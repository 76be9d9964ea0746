"""Vendor HTML to Markdown (``markdownify`` over an lxml-parsed tree). What Markdown cannot
hold is removed and reported, never dropped silently: embedded frames, media, scripts,
forms, and table cells spanning several rows or columns. The Markdown is then an answer like
any other (sanitised when rendered)."""

from __future__ import annotations

import re
from typing import Any

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

UNREPRESENTABLE = (
    "iframe",
    "script",
    "style",
    "video",
    "audio",
    "object",
    "embed",
    "form",
    "input",
    "button",
    "select",
    "textarea",
    "canvas",
    "svg",
)
_CHECKED = frozenset((*UNREPRESENTABLE, "td", "th"))
_CONVERTER = MarkdownConverter(heading_style="ATX", bullets="-", escape_misc=False)
_BLANK_LINES = re.compile(r"\n{3,}")


class _Tag(Tag):
    """A tag whose simple queries by name (those markdownify makes of every tag it converts,
    ``find_parent("pre")``, and of list items and table rows) compare names directly: bs4's
    general matcher made them a fifth of a conversion. Any other query is bs4's own."""

    def find_parent(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if kwargs or len(args) != 1 or not isinstance(args[0], str):
            return super().find_parent(*args, **kwargs)
        parent = self.parent
        while parent is not None:
            if parent.name == args[0]:
                return parent
            parent = parent.parent
        return None

    def find_previous_sibling(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if args or kwargs:  # markdownify asks it, without arguments, of rows and cells
            return super().find_previous_sibling(*args, **kwargs)
        sibling = self.previous_sibling
        while sibling is not None and not isinstance(sibling, Tag):
            sibling = sibling.previous_sibling
        return sibling

    def find_previous_siblings(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if kwargs or len(args) != 1 or not isinstance(args[0], str):  # markdownify: ("li")
            return super().find_previous_siblings(*args, **kwargs)
        return [s for s in self.previous_siblings if isinstance(s, Tag) and s.name == args[0]]


def to_markdown(html: str) -> tuple[str, list[str]]:
    """``html`` as Markdown, and one issue per kind of content that was left out."""
    soup = BeautifulSoup(html, "lxml", element_classes={Tag: _Tag})
    issues: list[str] = []
    removed: dict[str, int] = {}
    spanning = []
    # One walk of the tree, names compared directly (bs4's find_all matcher cost more than
    # the walk itself); the same elements, in the same order, as ``find_all`` of the names.
    checked = [el for el in soup.descendants if isinstance(el, Tag) and el.name in _CHECKED]
    for element in checked:
        if element.name in ("td", "th"):
            if element.get("colspan", "1") != "1" or element.get("rowspan", "1") != "1":
                spanning.append(element)
        elif not element.decomposed:
            removed[element.name] = removed.get(element.name, 0) + 1
            element.decompose()
    for name in UNREPRESENTABLE:
        if name in removed:
            issues.append(f"<{name}> removed ({removed[name]}): Markdown cannot hold it")
    if spanning:
        issues.append(f"table cells spanning rows or columns ({len(spanning)}) flattened")
    markdown = _CONVERTER.convert_soup(soup)
    return _BLANK_LINES.sub("\n\n", markdown).strip(), issues
