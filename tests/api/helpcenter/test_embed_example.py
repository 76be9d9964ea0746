"""The embedding example of docs/help-center.md, exactly as written there, works: served from
another origin, in a real headless Chromium, against the real app (``faq serve``) with a
publishable key that lists that origin. Only the three constants are filled in."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tenancy.embedded import free_port
from tests.api.helpcenter.test_feedback_browser import api
from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[3] / "docs" / "help-center.md"


def example_page(api_base: str, org: str, key: str) -> str:
    [html] = re.findall(r"```html\n(.*?)```", DOC.read_text(), flags=re.S)
    for name, value in (("API", api_base), ("ORG", org), ("KEY", key)):
        html, count = re.subn(rf'const {name} = "[^"]*";', f'const {name} = "{value}";', html)
        assert count == 1, name
    return html


class Site:
    """A static site on another origin (another port of 127.0.0.1) serving one page."""

    def __init__(self) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.page = b""
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(site.page)))
                self.end_headers()
                self.wfile.write(site.page)

            def log_message(self, *_: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site()
    try:
        yield served
    finally:
        served.server.shutdown()


def test_the_documented_page_lists_and_searches_published_questions(
    chromium: Browser,
    live_server: LiveServer,  # noqa: F811
    site: Site,
) -> None:
    category = api(live_server, "POST", "/categories", {"name": "Embedded on a site"})
    for status in ("published", "draft"):
        api(
            live_server,
            "POST",
            "/questions",
            {
                "title": f"Can I pay by zanzibarcheque ({status})?",
                "answer": "Yes, **within** 30 days.",
                "categoryId": category["id"],
                "status": status,
            },
        )
    created = api(
        live_server,
        "POST",
        "/keys",
        {"name": "website", "scopes": ["public"], "allowedOrigins": [site.origin]},
    )
    assert created["key"].startswith("faq_pk_")
    site.page = example_page(live_server.base_url, live_server.org_slug, created["key"]).encode()

    context = chromium.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{site.origin}/faq.html")
        # The first load lists published questions (CORS let the page read the answer).
        expect(page.locator("#questions summary").first).to_be_visible(timeout=15_000)
        page.fill("#q", "zanzibarcheque")
        page.press("#q", "Enter")
        titles = page.locator("#questions summary")
        expect(titles).to_have_count(1, timeout=15_000)
        assert titles.inner_text() == "Can I pay by zanzibarcheque (published)?"
        titles.click()
        expect(page.locator("#questions .answer")).to_have_text("Yes, **within** 30 days.")
        page.fill("#q", "nosuchwordanywhere")
        page.press("#q", "Enter")
        expect(page.locator("#status")).to_have_text("No question matches.", timeout=15_000)
        assert errors == []
    finally:
        context.close()


def test_the_page_on_an_origin_the_key_does_not_list_cannot_read(
    chromium: Browser,
    live_server: LiveServer,  # noqa: F811
    site: Site,
) -> None:
    created = api(
        live_server,
        "POST",
        "/keys",
        {
            "name": "other site",
            "scopes": ["public"],
            "allowedOrigins": ["https://elsewhere.example"],
        },
    )
    site.page = example_page(live_server.base_url, live_server.org_slug, created["key"]).encode()
    context = chromium.new_context()
    try:
        page = context.new_page()
        failed: list[str] = []
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto(f"{site.origin}/faq.html")
        # The browser refuses the answer (no Access-Control-Allow-Origin for this origin).
        page.wait_for_timeout(1500)
        assert any("/questions" in url for url in failed), failed
        assert page.locator("#questions summary").count() == 0
    finally:
        context.close()
