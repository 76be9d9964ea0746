"""Answers as HTML: Markdown rendered by markdown-it-py (raw HTML off: a ``<script>`` in an
answer is text) and the result sanitised by nh3 (ammonia): an allow-list of tags and
attributes, links only to http, https and mailto (``rel="noopener noreferrer"``), so no event
handler attribute or ``javascript:`` URL reaches a page. Headings shift one level down: the
page's own ``<h1>`` is the question.

Images (``helpCenter.externalImages``, issue 26): an image is shown only from the service
itself (a relative URL), or, when the org allows external images, from an ``https`` URL
(what the pages' Content-Security-Policy then allows); any other image becomes a link to it
(its alt text, else its URL), so an answer cannot make visitors' browsers call another host.

Rendering is CPU work (a hostile 100,000-character answer takes seconds in markdown-it and
~70 MB of tokens), so it runs off the event loop (``off_loop``) in a pool of one thread
(``ANSWERS``: what bounds the memory of renders in progress), once for concurrent requests of
one answer, without full garbage collections meanwhile (``full_collections_deferred``), and
the result is kept in a per-process LRU bounded by bytes (``RENDERED``), keyed by a digest of
the source and the image setting. The help center's other CPU work (a sitemap page's XML and
compression) goes through ``off_loop`` too, in its own one-thread pool (``DOCUMENTS``), so it
never waits behind an answer.

Also the colours of an org's theme (``theme_variables``): the text on the primary colour is
black or white, whichever contrasts more, and links use the primary colour only when it is
readable on white (WCAG AA, 4.5:1), and in dark mode only when readable on the dark
background."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

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
RENDERED_BYTES = 16 * 2**20  # the rendered answers kept per process
MAX_RENDERED = RENDERED_BYTES // 8  # a larger HTML is not kept (a 100,000-character answer
# gives at most ~1 MB)

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(
    ["table", "strikethrough"]
)
T = TypeVar("T")


def shown_as_image(src: str, external_images: bool) -> bool:
    """Whether an image's ``src`` is shown: a relative URL (the service itself) always, an
    ``https`` one when the org allows external images; anything else (another host, a
    scheme-relative ``//host``, ``http``, ``data:``) is not."""
    try:
        url = urlsplit(src.strip())
    except ValueError:
        return False
    if not url.scheme and not url.netloc:
        return True
    return external_images and url.scheme.lower() == "https" and bool(url.netloc)


def _images_as_links(children: list[Token], external_images: bool) -> list[Token]:
    out: list[Token] = []
    for token in children:
        src = str(token.attrGet("src") or "") if token.type == "image" else ""
        if token.type != "image" or shown_as_image(src, external_images):
            out.append(token)
            continue
        link = Token("link_open", "a", 1, attrs={"href": src})
        title = token.attrGet("title")
        if title:
            link.attrSet("title", str(title))
        text = token.children or [Token("text", "", 0, content=src)]
        out.extend([link, *text, Token("link_close", "a", -1)])
    return out


def markdown_html(source: str, external_images: bool = False) -> str:
    """Markdown -> HTML (raw HTML in the source stays text; images per ``shown_as_image``)."""
    tokens = _markdown.parse(source)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
        elif token.type == "inline" and token.children:
            token.children = _images_as_links(token.children, external_images)
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


def render_answer(source: str, external_images: bool = False) -> str:
    """An answer as safe HTML (CPU: call it through ``answer_html`` on the event loop)."""
    return sanitise(markdown_html(source, external_images))


class RenderedAnswers:
    """An LRU of rendered answers bounded by the bytes of their HTML (``sys.getsizeof``)."""

    def __init__(self, max_bytes: int, max_entry: int) -> None:
        self.max_bytes = max_bytes
        self.max_entry = max_entry
        self.bytes = 0
        self._entries: OrderedDict[tuple[bytes, bool], str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple[bytes, bool]) -> str | None:
        html = self._entries.get(key)
        if html is not None:
            self._entries.move_to_end(key)
        return html

    def put(self, key: tuple[bytes, bool], html: str) -> None:
        size = sys.getsizeof(html)
        if size > self.max_entry:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= sys.getsizeof(old)
        self._entries[key] = html
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self.bytes -= sys.getsizeof(dropped)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0


RENDERED = RenderedAnswers(RENDERED_BYTES, MAX_RENDERED)
# One render at a time per process (the ~70 MB of a hostile one is the bound); the sitemap's
# XML beside it. Threads start on first use (after Hypercorn's fork, if any).
ANSWERS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hc-answers")
DOCUMENTS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hc-documents")
_rendering: dict[tuple[bytes, bool], asyncio.Future[str]] = {}
_deferring = threading.Lock()
_deferred: list[tuple[int, int, int]] = []  # the thresholds to restore, while renders run
_renders = 0
NO_FULL_COLLECTION = 2**31 - 1  # the largest threshold (a C int)


async def off_loop(pool: Executor, work: Callable[..., T], *args: object) -> T:
    """``work(*args)`` in ``pool`` (``ANSWERS`` or ``DOCUMENTS``): the help center's CPU work
    never holds the event loop, which takes the GIL back every switch interval (5 ms; zlib
    and nh3 let go of it)."""
    return await asyncio.get_running_loop().run_in_executor(pool, work, *args)


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """No full (generation 2) garbage collection while an answer renders: markdown-it makes
    ~10^5 tokens for a hostile answer, and a full collection over them holds the GIL, so the
    event loop waited 0.2-0.4 s each time (measured). Young collections go on; the thresholds
    come back when the last render ends, its tokens freed (cheap to collect then)."""
    global _renders
    with _deferring:
        if _renders == 0:
            first, second, third = gc.get_threshold()
            _deferred.append((first, second, third))
            gc.set_threshold(first, second, NO_FULL_COLLECTION)
        _renders += 1
    try:
        yield
    finally:
        with _deferring:
            _renders -= 1
            if _renders == 0:
                gc.set_threshold(*_deferred.pop())


def _render_deferring_collections(source: str, external_images: bool) -> str:
    with full_collections_deferred():
        return render_answer(source, external_images)


def cache_key(source: str, *, external_images: bool) -> tuple[bytes, bool]:
    """A rendered answer's key: a digest of its source (not the source: up to 400 KB) and
    the image setting it was rendered with."""
    return hashlib.blake2b(source.encode(), digest_size=16).digest(), external_images


async def answer_html(source: str, *, external_images: bool = False) -> str:
    """An answer as safe HTML: from ``RENDERED``, else rendered off the event loop (one
    render for concurrent requests of the same answer)."""
    key = cache_key(source, external_images=external_images)
    html = RENDERED.get(key)
    if html is not None:
        return html
    loop = asyncio.get_running_loop()
    pending = _rendering.get(key)
    if pending is None or pending.get_loop() is not loop:
        pending = loop.run_in_executor(
            ANSWERS, _render_deferring_collections, source, external_images
        )
        _rendering[key] = pending
        pending.add_done_callback(lambda done: _finish_render(key, done))
    return await asyncio.shield(pending)


def _finish_render(key: tuple[bytes, bool], done: asyncio.Future[str]) -> None:
    if _rendering.get(key) is done:
        del _rendering[key]
    if not done.cancelled() and done.exception() is None:
        RENDERED.put(key, done.result())


def _luminance(color: str) -> float:
    channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


DARK_BACKGROUND = "#15171a"  # the pages' background in dark mode (static/hc.css)
DARK_CARD = "#1b1d21"  # a card's, in dark mode


def theme_variables(primary: str) -> str:
    """CSS custom properties of an org's theme (``#rrggbb`` in, validated by the settings);
    ``--hc-link-dark``: links in dark mode (``prefers-color-scheme``), the primary colour
    only when it is readable on the dark cards and background (issue 41)."""
    on_primary = (
        "#ffffff" if contrast(primary, "#ffffff") >= contrast(primary, "#000000") else "#000000"
    )
    link = primary if contrast(primary, "#ffffff") >= 4.5 else "#1a4f99"
    readable = min(contrast(primary, DARK_BACKGROUND), contrast(primary, DARK_CARD)) >= 4.5
    dark_link = primary if readable else "#8ab4f8"
    return (
        f":root{{--hc-primary:{primary};--hc-on-primary:{on_primary};--hc-link:{link};"
        f"--hc-link-dark:{dark_link}}}\n"
    )
