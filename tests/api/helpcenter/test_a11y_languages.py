"""Every page type of the help center, in English, French and Arabic (right to left), in a real
headless Chromium against the live app (issue 32): axe-core finds no serious or critical
violation, in light and dark mode (``prefers-color-scheme``, issue 41); the Arabic pages are
``dir="rtl"`` and their layout holds (mirrored header, no sideways scrolling, on a desktop and
a phone); nothing is requested from another host.

``FAQ_SCREENSHOTS=docs/help-center`` saves a screenshot of each page type there
(``docs/help-center/screenshots.sh`` runs this module so).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page

from api.helpcenter.favicon import png
from tests.api.helpcenter.conftest import BrowserPage
from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow

LANGUAGES = ("en", "fr", "ar")
# A heading in the page's language (an untranslated question keeps its own direction).
HEADINGS = {"home": "#categories-title", "question": "#feedback-heading", "search": "main h1"}


@dataclass(frozen=True)
class Site:
    base: str  # http://127.0.0.1:port/hc/{org}
    origin: str
    pages: dict[str, tuple[str, int]]  # name -> (path after the locale, status)


def _api(server: LiveServer, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    data = json.dumps(body).encode() if body is not None else kw.get("raw")
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{server.org_slug}{path}",
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {server.admin_key}",
            "Content-Type": kw.get("content_type", "application/json"),
        },
    )
    with urllib.request.urlopen(request, timeout=20) as r:
        return json.loads(r.read() or b"null")


@pytest.fixture(scope="module")
def site(live_server: LiveServer) -> Iterator[Site]:  # noqa: F811
    s = live_server
    _api(s, "PATCH", "/settings", {"locales": ["en", "fr", "ar"]})
    _api(s, "PATCH", "/settings", {"helpCenter": {
        "enabled": True, "title": "Acme Help Center", "primaryColor": "#0b5d4b",
        "headerLinks": [{"label": "acme.example", "url": "https://acme.example"},
                        {"label": "Status", "url": "https://status.acme.example"}],
        "footerLinks": [{"label": "Privacy", "url": "/privacy"},
                        {"label": "Terms", "url": "/terms"},
                        {"label": "Contact", "url": "mailto:help@acme.example"}],
        "legalText": "© 2026 Acme Inc. All rights reserved.",
        "contactUrl": "https://acme.example/contact",
    }})  # fmt: skip
    _api(s, "PUT", "/settings/help-center/logo", raw=png("#0b5d4b"), content_type="image/png")
    orders = _api(s, "POST", "/categories", {
        "name": "Orders and delivery", "description": "Tracking, delivery times and returns.",
    })["data"]  # fmt: skip
    returns = _api(s, "POST", "/categories", {"name": "Returns", "parentId": orders["id"]})["data"]
    _api(s, "PATCH", "/settings", {"helpCenter": {"categoryIcons": {orders["id"]: "📦"}}})
    _api(s, "PUT", f"/categories/{orders['id']}/translations/fr", {
        "name": "Commandes et livraison", "description": "Suivi, délais de livraison et retours.",
    })  # fmt: skip
    q = _api(s, "POST", "/questions", {
        "title": "How do I track my order?",
        "answer": "Open **Orders**, then *Track*.\n\n1. Find the order\n2. Click *Track*",
        "categoryId": orders["id"], "status": "published",
    })["data"]  # fmt: skip
    _api(s, "POST", "/questions", {
        "title": "How do I return an item?", "answer": "Within 30 days, from **Orders**.",
        "categoryId": returns["id"], "status": "published",
    })  # fmt: skip
    _api(s, "PUT", f"/questions/{q['id']}/translations/fr", {
        "title": "Comment suivre ma commande ?", "answer": "Ouvrez **Commandes**, puis *Suivre*.",
        "status": "published",
    })  # fmt: skip
    gone = _api(s, "POST", "/questions", {
        "title": "Is express delivery available?", "answer": "Not any more.",
        "categoryId": orders["id"], "status": "published",
    })["data"]  # fmt: skip
    _api(s, "DELETE", f"/questions/{gone['id']}")
    pages = {
        "home": ("", 200),
        "category": (f"/categories/{orders['slug']}", 200),
        "question": (f"/questions/{q['slug']}", 200),
        "thanks": (f"/questions/{q['slug']}?feedback=thanks", 200),
        "search": ("/search?q=order", 200),
        "search-none": ("/search?q=zzzzqqq", 200),
        "not-found": ("/questions/no-such-question", 404),
        "gone": (f"/questions/{gone['slug']}", 410),
    }
    yield Site(f"{s.base_url}/hc/{s.org_slug}", s.base_url, pages)
    _api(s, "DELETE", "/settings/help-center/logo")
    _api(s, "PATCH", "/settings", {"helpCenter": {"enabled": False}})


def serious(page: Page) -> list[Any]:
    results = Axe().run(page)
    return [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def screenshot(page: Page, name: str) -> None:
    folder = os.environ.get("FAQ_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def layout_holds(page: Page) -> None:
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, overflow


@pytest.mark.parametrize("locale", LANGUAGES)
def test_every_page_type_passes_axe(site: Site, browser_page: BrowserPage, locale: str) -> None:
    page = browser_page.page
    for name, (path, status) in site.pages.items():
        response = page.goto(f"{site.base}/{locale}{path}", wait_until="load")
        assert response is not None and response.status == status, (locale, name)
        assert page.locator("html").get_attribute("lang") == locale
        assert page.locator("html").get_attribute("dir") == ("rtl" if locale == "ar" else "ltr")
        assert serious(page) == [], (locale, name)
        layout_holds(page)
        screenshot(page, name if locale == "en" else f"{locale}-{name}")
    assert browser_page.outside(site.origin) == []


def _box(page: Page, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box


def text_span(page: Page, selector: str) -> tuple[float, float]:
    """Where the text of the first ``selector`` is drawn (left, right)."""
    span: list[float] = page.evaluate(
        "(s) => { const r = document.createRange();"
        " r.selectNodeContents(document.querySelector(s));"
        " const b = r.getBoundingClientRect(); return [b.left, b.right]; }",
        selector,
    )
    return span[0], span[1]


def test_the_arabic_pages_are_mirrored_and_hold_on_a_phone(site: Site, chromium: Browser) -> None:
    for width in (1280, 390):
        context = chromium.new_context(viewport={"width": width, "height": 900})
        try:
            page = context.new_page()
            for locale in ("en", "ar"):
                for name in ("home", "question", "search"):
                    page.goto(f"{site.base}/{locale}{site.pages[name][0]}", wait_until="load")
                    layout_holds(page)
                    title = _box(page, "header .bar h1, header .brand")
                    middle = title["x"] + title["width"] / 2
                    # The title starts the header: on the left in English, the right in Arabic.
                    if locale == "ar":
                        assert middle > width / 2, (width, name, title)
                    else:
                        assert middle < width / 2, (width, name, title)
                    left, right = text_span(page, HEADINGS[name])
                    if locale == "ar":  # a translated heading starts at the right
                        assert right > width * 0.6, (width, name, left, right)
                    else:
                        assert left < width * 0.4, (width, name, left, right)
                    if width == 390 and locale == "ar":
                        screenshot(page, f"ar-phone-{name}")
        finally:
            context.close()


def background(page: Page) -> tuple[int, ...]:
    """The page's background colour as (r, g, b)."""
    color: str = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    return tuple(int(c) for c in color[color.index("(") + 1 : color.index(")")].split(",")[:3])


@pytest.mark.parametrize("locale", LANGUAGES)
def test_dark_mode_follows_the_system_and_passes_axe(
    site: Site, chromium: Browser, locale: str
) -> None:
    """``prefers-color-scheme: dark``: a dark page whose every text still reads (axe's colour
    contrast among its rules), on a desktop and a phone; light stays light."""
    for width, scheme in ((1280, "dark"), (390, "dark"), (390, "light")):
        context = chromium.new_context(
            viewport={"width": width, "height": 900}, color_scheme=scheme
        )
        try:
            page = context.new_page()
            for name, (path, status) in site.pages.items():
                response = page.goto(f"{site.base}/{locale}{path}", wait_until="load")
                assert response is not None and response.status == status, (locale, name)
                if scheme == "dark":
                    assert max(background(page)) < 60, (locale, name, background(page))
                else:
                    assert min(background(page)) > 200, (locale, name, background(page))
                assert serious(page) == [], (locale, scheme, width, name)
                layout_holds(page)
                prefix = "" if locale == "en" else f"{locale}-"
                device = "phone-" if width == 390 else ""
                mode = "dark-" if scheme == "dark" else ""
                screenshot(page, f"{prefix}{device}{mode}{name}")
        finally:
            context.close()
