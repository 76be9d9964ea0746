"""Shared fixtures of the help center tests: a real headless Chromium (Debian's ``chromium``,
driven by Playwright's sync API; no browser is downloaded) and pages that record every request
they make, so a test can assert that nothing leaves for another host.

Browser tests are plain (sync) test functions: Playwright's sync API runs its own event loop.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import Browser, Page, Playwright, Request, sync_playwright


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is missing: `make test` installs it (apt-get install)")
    return path


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def chromium(playwright: Playwright) -> Iterator[Browser]:
    """One headless Chromium per test module."""
    browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
    try:
        yield browser
    finally:
        browser.close()


@dataclass
class BrowserPage:
    """A fresh browser context (own cookies) and its page; ``requested`` lists every URL."""

    page: Page
    requested: list[str] = field(default_factory=list)

    def outside(self, base_url: str) -> list[str]:
        """Requests that went anywhere but ``base_url`` (``data:`` URLs stay in the page)."""
        return [
            u for u in self.requested if not u.startswith(base_url) and not u.startswith("data:")
        ]


@pytest.fixture
def browser_page(chromium: Browser) -> Iterator[BrowserPage]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        recorded = BrowserPage(page)

        def record(request: Request) -> None:
            recorded.requested.append(request.url)

        page.on("request", record)
        yield recorded
    finally:
        context.close()
