"""Answers as HTML: Markdown rendered by markdown-it-py (raw HTML off: a ``<script>`` in an
answer is text) and the result sanitised by nh3 (ammonia): an allow-list of tags and
attributes, links only to http, https and mailto (``rel="noopener noreferrer"``), so no event
handler attribute or ``javascript:`` URL reaches a page. Headings shift one level down: the
page's own ``<h1>`` is the question.

Also the colours of an org's theme (``theme_variables``): the text on the primary colour is
black or white, whichever contrasts more, and links use the primary colour only when it is
readable on white (WCAG AA, 4.5:1)."""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h2", "h3", "h4", "h5", "h6",
        "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table",
        "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
    "code": {"class"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(
    ["table", "strikethrough"]
)


def markdown_html(source: str) -> str:
    """Markdown -> HTML (raw HTML in the source stays text)."""
    tokens = _markdown.parse(source)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
    return str(_markdown.renderer.render(tokens, _markdown.options, {}))


def sanitise(html: str) -> str:
    return nh3.clean(
        html,
        tags=set(TAGS),
        attributes={k: set(v) for k, v in ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


@lru_cache(maxsize=4096)
def answer_html(source: str) -> str:
    """An answer as safe HTML."""
    return sanitise(markdown_html(source))


def _luminance(color: str) -> float:
    channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def theme_variables(primary: str) -> str:
    """CSS custom properties of an org's theme (``#rrggbb`` in, validated by the settings)."""
    on_primary = (
        "#ffffff" if contrast(primary, "#ffffff") >= contrast(primary, "#000000") else "#000000"
    )
    link = primary if contrast(primary, "#ffffff") >= 4.5 else "#1a4f99"
    return f":root{{--hc-primary:{primary};--hc-on-primary:{on_primary};--hc-link:{link}}}\n"
