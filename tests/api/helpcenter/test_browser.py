"""The help center in a real headless Chromium (issue 16), against the live app (`faq serve`):
a visitor goes from the home page to a category, a question, a search result and another
language; an answer holding a script does not run it; the keyboard alone reaches the search
box; axe-core finds no serious or critical violation on any page type; nothing is requested
from another host; a page weighs under 60 KB.

``FAQ_SCREENSHOTS=docs/help-center`` saves one screenshot per page type there (``make
screenshots``-style: set it on a run to refresh the pictures of the repository's docs).
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
from playwright.sync_api import Page

from tests.api.helpcenter.conftest import BrowserPage
from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow

SCRIPTED_ANSWER = (
    "Press **Reset**.\n\n<script>window.pwned=1</script>\n\n"
    '<img src=x onerror="window.pwned=2">\n\n[click me](javascript:window.pwned=3)\n\n'
    '<a href="javascript:window.pwned=4" onclick="window.pwned=5">raw link</a>'
)


@dataclass(frozen=True)
class Site:
    base: str  # http://127.0.0.1:port/hc/{org}
    origin: str
    category_slug: str
    question_slug: str
    scripted_slug: str


def _api(server: LiveServer, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{server.org_slug}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {server.admin_key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=20) as r:
        return json.loads(r.read() or b"null")


@pytest.fixture(scope="module")
def site(live_server: LiveServer) -> Iterator[Site]:  # noqa: F811
    s = live_server
    _api(s, "PATCH", "/settings", {"locales": ["en", "fr"]})
    _api(s, "PATCH", "/settings", {"helpCenter": {"enabled": True, "title": "Acme Help Center"}})
    parent = _api(s, "POST", "/categories", {"name": "Account"})["data"]
    child = _api(s, "POST", "/categories", {"name": "Passwords", "parentId": parent["id"]})["data"]
    _api(s, "PUT", f"/categories/{parent['id']}/translations/fr", {"name": "Compte"})
    q = _api(s, "POST", "/questions", {
        "title": "How do I reset my password?",
        "answer": "Open **Settings**, then *Security*.\n\n1. Click *Reset*\n2. Check your mail",
        "categoryId": child["id"], "status": "published",
    })["data"]  # fmt: skip
    _api(s, "PUT", f"/questions/{q['id']}/translations/fr", {
        "title": "Comment réinitialiser mon mot de passe ?",
        "answer": "Ouvrez **Réglages**, puis *Sécurité*.", "status": "published",
    })  # fmt: skip
    scripted = _api(s, "POST", "/questions", {
        "title": "Does the reset email expire?", "answer": SCRIPTED_ANSWER,
        "categoryId": child["id"], "status": "published",
    })["data"]  # fmt: skip
    yield Site(
        f"{s.base_url}/hc/{s.org_slug}", s.base_url, parent["slug"], q["slug"], scripted["slug"]
    )
    _api(s, "PATCH", "/settings", {"helpCenter": {"enabled": False}})


def _screenshot(page: Page, name: str, tmp: Path) -> None:
    folder = os.environ.get("FAQ_SCREENSHOTS")
    target = Path(folder) if folder else tmp
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / f"{name}.png"), full_page=True)


def _open(bp: BrowserPage, url: str) -> int:
    response = bp.page.goto(url, wait_until="load")
    assert response is not None
    return response.status


def test_a_visitor_browses_searches_and_switches_language(
    site: Site, browser_page: BrowserPage, tmp_path: Path
) -> None:
    page = browser_page.page
    assert _open(browser_page, site.base) == 200  # /hc/{org} -> /hc/{org}/en
    assert page.url == f"{site.base}/en"
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator("h1").inner_text() == "Acme Help Center"
    _screenshot(page, "home", tmp_path)

    page.get_by_role("link", name="Account", exact=True).click()
    page.wait_for_url(f"{site.base}/en/categories/{site.category_slug}")
    assert page.locator("h1").inner_text() == "Account"
    _screenshot(page, "category", tmp_path)
    page.get_by_role("link", name="Passwords", exact=True).click()
    page.get_by_role("link", name="How do I reset my password?").click()
    page.wait_for_url(f"{site.base}/en/questions/{site.question_slug}")
    assert page.locator("article strong").inner_text() == "Settings"
    assert page.locator("#feedback").count() == 1
    _screenshot(page, "question", tmp_path)

    page.get_by_label("Search the help center").fill("password")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{site.base}/en/search?q=password")
    assert "Results for" in page.locator("h1").inner_text()
    _screenshot(page, "search", tmp_path)
    page.locator("main").get_by_role("link", name="How do I reset my password?").click()
    page.wait_for_url(f"{site.base}/en/questions/{site.question_slug}")

    page.get_by_role("navigation", name="Language").get_by_role("link", name="Français").click()
    page.wait_for_url(f"{site.base}/fr/questions/{site.question_slug}")
    assert page.locator("html").get_attribute("lang") == "fr"
    assert page.locator("h1").inner_text() == "Comment réinitialiser mon mot de passe ?"
    assert browser_page.outside(site.origin) == []


def test_an_answer_holding_a_script_does_not_run_it(site: Site, browser_page: BrowserPage) -> None:
    page = browser_page.page
    errors: list[str] = []
    page.on("dialog", lambda d: (errors.append(d.message), d.dismiss()))
    assert _open(browser_page, f"{site.base}/en/questions/{site.scripted_slug}") == 200
    assert page.evaluate("typeof window.pwned") == "undefined"
    for link in page.locator("article a").all():
        href = link.get_attribute("href") or ""
        assert not href.strip().lower().startswith("javascript:"), href
        assert link.get_attribute("onclick") is None
    assert page.locator("article script, article [onerror], article img").count() == 0
    page.locator("article").get_by_text("raw link").click()  # inert text
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert errors == []


def test_the_keyboard_alone_reaches_the_search_box(site: Site, browser_page: BrowserPage) -> None:
    page = browser_page.page
    _open(browser_page, f"{site.base}/en")
    for _ in range(15):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "q":
            break
    else:
        pytest.fail("Tab never reached the search box")
    page.keyboard.type("reset")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{site.base}/en/search?q=reset")
    assert page.get_by_role("link", name="How do I reset my password?").count() == 1


def test_every_page_type_passes_axe_and_stays_small_and_local(
    site: Site, browser_page: BrowserPage
) -> None:
    page = browser_page.page
    axe = Axe()
    pages = {
        "home": f"{site.base}/en",
        "category": f"{site.base}/en/categories/{site.category_slug}",
        "question": f"{site.base}/en/questions/{site.question_slug}",
        "search": f"{site.base}/en/search?q=password",
        "search-empty": f"{site.base}/fr/search?q=zzzzqqq",
        "not-found": f"{site.base}/en/questions/no-such-question",
    }
    sizes: list[int] = []
    page.on("response", lambda r: sizes.append(len(r.body())))
    for name, url in pages.items():
        sizes.clear()
        status = _open(browser_page, url)
        assert status == (404 if name == "not-found" else 200), name
        results = axe.run(page)
        bad = [
            (v["id"], v["impact"], [n["target"] for n in v["nodes"]])
            for v in results.response["violations"]
            if v["impact"] in ("serious", "critical")
        ]
        assert bad == [], (name, bad)
        assert 0 < sum(sizes) < 60_000, (name, sum(sizes))  # the page and its stylesheet
    assert browser_page.outside(site.origin) == []
