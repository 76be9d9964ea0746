"""The help center's sitemap as XML (sitemaps.org 0.9, issue 26), no Quart here.

``/hc/{org}/sitemap.xml`` is a sitemap index of pages ``/hc/{org}/sitemaps/{n}.xml``
(n = 1, 2, …). A page holds whole questions, in id order: each one's URL in every enabled
locale, each URL with an ``hreflang`` alternate per enabled locale and ``x-default``, so every
URL is in exactly one page with all its alternates.

How many questions a page holds (``questions_per_page``) depends only on the org's locales and
the length of the site's root URL, never on the content, so the index and each page agree on
the pages without reading each other: a page is at most ``MAX_URLS`` URLs, and at most
``PAGE_BYTES`` even if every slug had the longest length (``SLUG_MAX``). A page is built from
batches of questions read by keyset (``content.published_slugs``), each at most
``BATCH_BYTES`` of XML, and compressed as it is written (``Gzipped``): a request holds one
batch and the compressed page (sitemaps compress ~30x), which is what the response cache
keeps. A root longer than ``MAX_ROOT`` (a forged ``Host``) gets no sitemap.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import datetime
from xml.sax.saxutils import escape

from api.questions.schemas import SLUG_MAX

MAX_URLS = 50_000  # sitemaps.org: URLs per page
MAX_SITEMAPS = 50_000  # sitemaps.org: pages per index; questions past them are left out
PAGE_BYTES = 8 * 2**20  # ours (sitemaps.org allows 50 MB): one page, the longest slugs
BATCH_BYTES = 2**20  # the XML of the questions read by one query, the longest slugs
INDEX_BATCH = 2_000  # index entries written at once
MAX_ROOT = 400  # bytes of the escaped root: a host name is at most 253 characters
XML_TYPE = "application/xml"

INDEX_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
)
INDEX_TAIL = "</sitemapindex>\n"
URLSET_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)
URLSET_TAIL = "</urlset>\n"
# ``root``, tags and slugs go in escaped (tags and slugs never need it: [A-Za-z0-9-]).
SITEMAP = "<sitemap><loc>{root}/sitemaps/{n}.xml</loc></sitemap>\n"
URL = "<url><loc>{root}/{tag}/questions/{slug}</loc><lastmod>{day}</lastmod>{links}</url>\n"
LINK = '<xhtml:link rel="alternate" hreflang="{lang}" href="{root}/{tag}/questions/{slug}"/>'
DAY = len("2026-01-01")
DEFAULT_TAG = "x-default"


def _question_bytes(locales: Sequence[str], root: str) -> int:
    """The most XML one question can make: its URL in each locale, each with its
    alternates, at the longest slug."""
    tag = max(len(t) for t in locales)
    link = len(LINK.format(lang="", tag="", root="", slug="")) + len(root) + tag + SLUG_MAX
    url = len(URL.format(root="", tag="", slug="", day="", links="")) + len(root) + tag
    alternates = len(locales) * (link + tag) + link + len(DEFAULT_TAG)
    return len(locales) * (url + SLUG_MAX + DAY + alternates)


def questions_per_page(locales: Sequence[str], root: str) -> int:
    """How many questions each page holds (at least one) for these locales and this
    (escaped) root: every URL of a question, at the longest slug, fits ``PAGE_BYTES``."""
    room = PAGE_BYTES - len(URLSET_HEAD) - len(URLSET_TAIL)
    return max(1, min(MAX_URLS // len(locales), room // _question_bytes(locales, root)))


def questions_per_batch(locales: Sequence[str], root: str, most: int) -> int:
    """How many questions one query reads for a page (at most ``most``, at least one): their
    XML fits ``BATCH_BYTES``."""
    return max(1, min(most, BATCH_BYTES // _question_bytes(locales, root)))


def page_count(published: int, per_page: int) -> int:
    return min(MAX_SITEMAPS, -(-published // per_page))


class Gzipped:
    """A document compressed (gzip, as ``Content-Encoding: gzip`` sends it) as it is written:
    only the compressed bytes are kept."""

    def __init__(self, head: str) -> None:
        self._compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self._out = [self._compressor.compress(head.encode())]

    def write(self, data: bytes) -> None:
        self._out.append(self._compressor.compress(data))

    def close(self, tail: str) -> bytes:
        self._out.append(self._compressor.compress(tail.encode()))
        self._out.append(self._compressor.flush())
        return b"".join(self._out)


def index_gzip(root: str, pages: int) -> bytes:
    """The index of ``pages`` pages (none when nothing is published), compressed."""
    out = Gzipped(INDEX_HEAD)
    for first in range(1, pages + 1, INDEX_BATCH):
        last = min(pages, first + INDEX_BATCH - 1)
        out.write("".join(SITEMAP.format(root=root, n=n) for n in range(first, last + 1)).encode())
    return out.close(INDEX_TAIL)


def write_urls(
    out: Gzipped,
    root: str,
    locales: Sequence[str],
    default: str,
    entries: Sequence[tuple[str, datetime]],
) -> None:
    out.write(urls_xml(root, locales, default, entries))


def urls_xml(
    root: str, locales: Sequence[str], default: str, entries: Sequence[tuple[str, datetime]]
) -> bytes:
    """The ``<url>`` elements of a batch of questions (slug, last change)."""
    out: list[str] = []
    for slug, updated in entries:
        slug = escape(slug)
        links = "".join(LINK.format(lang=t, tag=t, root=root, slug=slug) for t in locales)
        links += LINK.format(lang=DEFAULT_TAG, tag=default, root=root, slug=slug)
        day = updated.date().isoformat()
        out.extend(
            URL.format(root=root, tag=tag, slug=slug, day=day, links=links) for tag in locales
        )
    return "".join(out).encode()
