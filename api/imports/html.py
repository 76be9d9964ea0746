"""Vendor HTML to Markdown: lxml finds and removes what Markdown cannot hold (embedded frames,
media, scripts, forms) and counts table cells spanning several rows or columns; then
``html-to-markdown`` (compiled) converts the rest. What is left out is reported, never dropped
silently. The Markdown is then an answer like any other (sanitised when rendered).

The converter was markdownify until issue 29's bench: about 12 ms per 5 KB article there,
about 1 ms here (``docs/performance.md``)."""

from __future__ import annotations

import re

import html_to_markdown
import lxml.html
from lxml import etree

from api.imports.links import Link, new_placeholder_prefix, target_of

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
_OPTIONS = html_to_markdown.ConversionOptions(heading_style="atx", bullets="-", compact_tables=True)
_BLANK_LINES = re.compile(r"\n{3,}")
_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
# The converter folds a no-break space into a space; the source meant it (``50&nbsp;€``), so
# it crosses the converter as a private-use character (unless the text holds one already).
_NBSP, _KEPT = "\xa0", "\ue000"


def _checked(root: etree._Element) -> tuple[dict[str, int], int]:
    """Removes from ``root`` what Markdown cannot hold: the count of each kind removed (an
    element inside one already removed is not counted), and the number of spanning cells."""
    removed: dict[str, int] = {}
    spanning = 0
    gone: set[etree._Element] = set()
    for element in list(root.iter(*UNREPRESENTABLE, "td", "th", "{*}svg")):
        name = etree.QName(element).localname
        if name in ("td", "th"):
            if element.get("colspan", "1") != "1" or element.get("rowspan", "1") != "1":
                spanning += 1
        elif not any(ancestor in gone for ancestor in element.iterancestors()):
            removed[name] = removed.get(name, 0) + 1
            gone.add(element)
            element.drop_tree()  # its tail text stays
    return removed, spanning


def _placeholders(root: etree._Element, rules: str) -> list[Link]:
    """Each link to a resource of the same source (``links.target_of``) with a placeholder
    for its href (``api/imports/links.py``)."""
    links: list[Link] = []
    prefix = ""
    for element in root.iter("a"):
        href = element.get("href")
        found = target_of(rules, href) if href else None
        if found is None:
            continue
        assert href is not None
        prefix = prefix or new_placeholder_prefix()
        placeholder = f"{prefix}{len(links)}"
        element.set("href", placeholder)
        links.append(Link(placeholder, href, *found))
    return links


def to_markdown(html: str) -> tuple[str, list[str]]:
    """``html`` as Markdown, and one issue per kind of content that was left out."""
    markdown, issues, _links = linked_markdown(html, None)
    return markdown, issues


def linked_markdown(html: str, rules: str | None) -> tuple[str, list[str], list[Link]]:
    """``to_markdown``, and the body's links to resources of the same source (``rules``: the
    format's, ``api/imports/links.py``), each with a placeholder for its href."""
    if not html.strip():
        return "", [], []
    try:  # the text is decoded already: a declaration of its bytes' encoding means nothing
        root = lxml.html.document_fromstring(_DECLARATION.sub("", html))
    except etree.ParserError:  # nothing but comments or processing instructions: no content
        return "", [], []
    removed, spanning = _checked(root)
    links = _placeholders(root, rules) if rules else []
    issues = [
        f"<{name}> removed ({removed[name]}): Markdown cannot hold it"
        for name in UNREPRESENTABLE
        if name in removed
    ]
    if spanning:
        issues.append(f"table cells spanning rows or columns ({spanning}) flattened")
    cleaned = lxml.html.tostring(root, encoding="unicode")
    keep = _KEPT not in cleaned
    if keep:
        cleaned = cleaned.replace(_NBSP, _KEPT).replace("&nbsp;", _KEPT).replace("&#160;", _KEPT)
    markdown = html_to_markdown.convert(cleaned, _OPTIONS).content or ""
    if keep:
        markdown = markdown.replace(_KEPT, _NBSP)
    return _BLANK_LINES.sub("\n\n", markdown).strip(), issues, links
