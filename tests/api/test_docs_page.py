"""``/docs`` in a real headless Chromium (Debian's ``chromium``, which ``make test`` installs):
the page renders the OpenAPI 3.1 document, lists the operations of every resource, an operation
expands when clicked, and every file the page loads comes from the service itself (no CDN).

Playwright drives the system browser (``executable_path``); no browser is downloaded.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Request, sync_playwright

from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow

RESOURCES = ("categories", "questions", "webhooks", "billing", "settings", "translations")


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is missing: `make test` installs it (apt-get install)")
    return path


def test_the_docs_page_renders_every_resource_and_expands(
    live_server: LiveServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    requested: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 2000})

            def record(request: Request) -> None:
                requested.append(request.url)

            page.on("request", record)
            page.goto(f"{live_server.base_url}/docs", wait_until="load")
            page.wait_for_selector(".opblock", timeout=30_000)
            text = page.inner_text("body")
            assert "Unable to render this definition" not in text
            assert "FAQ service" in text

            sections = {
                t.strip().split("\n")[0] for t in page.locator(".opblock-tag").all_inner_texts()
            }
            assert set(RESOURCES) <= sections, sections  # grouped by resource, not "default"
            paths = page.locator(".opblock-summary-path").all_inner_texts()
            for resource in RESOURCES:
                assert any(f"/{resource}" in p for p in paths), (resource, paths)
            summaries = page.locator(".opblock-summary-method").all_inner_texts()
            methods = {m.strip().upper() for m in summaries}
            assert {"GET", "POST", "PATCH", "DELETE"} <= methods, methods

            operation = page.locator(".opblock", has_text="/api/v1/{org}/categories").first
            assert operation.locator(".opblock-body").count() == 0  # collapsed
            operation.locator(".opblock-summary").first.click()
            operation.locator(".opblock-body").wait_for(state="visible", timeout=10_000)
            assert operation.locator(".parameters-container, .opblock-description-wrapper").count()
            assert "Responses" in operation.inner_text()
            page.screenshot(path=str(tmp_path / "docs.png"), full_page=False)
        finally:
            browser.close()
    assert requested
    outside = [u for u in requested if not u.startswith(live_server.base_url)]
    assert outside == [], outside


def test_the_docs_page_without_javascript_says_where_the_document_is(
    live_server: LiveServer,  # noqa: F811
) -> None:
    """A visitor whose browser runs no JavaScript sees why the page is empty and a link to the
    OpenAPI document itself, which the link serves."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), headless=True)
        try:
            context = browser.new_context(java_script_enabled=False)
            page = context.new_page()
            page.goto(f"{live_server.base_url}/docs", wait_until="load")
            text = page.inner_text("body")
            assert "JavaScript" in text, text
            link = page.locator("a[href='/openapi.json']")
            assert link.count() == 1
            assert page.locator("html[lang='en']").count() == 1
            response = page.goto(f"{live_server.base_url}/openapi.json")
            assert response is not None and response.status == 200
            assert '"openapi": "3.1' in response.text() or '"openapi":"3.1' in response.text()
        finally:
            browser.close()


def test_the_docs_page_opens_with_the_overview_and_renders_markdown(
    live_server: LiveServer,  # noqa: F811
) -> None:
    """Issue 32: the overview (authentication, errors, pagination, rate limits, idempotency,
    webhook signatures) opens the page; summaries are whole sentences without raw backticks;
    an operation's description renders its Markdown (``code`` as code); ``/`` leads here."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 2000})
            page.goto(f"{live_server.base_url}/", wait_until="load")
            assert page.url == f"{live_server.base_url}/docs"
            page.wait_for_selector(".opblock", timeout=30_000)
            overview = page.locator(".information-container .info .description")
            headings = {h.strip() for h in overview.locator("h2").all_inner_texts()}
            assert {
                "Authentication",
                "Errors",
                "Pagination",
                "Rate limits",
                "Idempotency",
                "Webhook signatures",
            } <= headings, headings
            text = overview.inner_text()
            assert "faq_pk_" in text and "X-Service-Webhook-Signature" in text
            assert overview.locator("table").count() >= 1  # the two kinds of key
            assert overview.locator("code", has_text="X-Idempotency-Key").count() >= 1
            # The overview comes before the first operation.
            info_box = overview.bounding_box()
            first_operation = page.locator(".opblock").first.bounding_box()
            assert info_box is not None and first_operation is not None
            assert info_box["y"] < first_operation["y"]

            summaries = page.locator(".opblock-summary-description").all_inner_texts()
            assert len(summaries) >= 40
            for summary in summaries:
                assert "`" not in summary, summary
                assert summary.rstrip().endswith((".", "?", ")")), summary

            operation = (
                page.locator(
                    ".opblock", has=page.locator(".opblock-summary-path", has_text="/questions")
                )
                .filter(has=page.locator(".opblock-summary-method", has_text="GET"))
                .first
            )
            operation.locator(".opblock-summary").first.click()
            description = operation.locator(".opblock-description-wrapper")
            description.wait_for(state="visible", timeout=10_000)
            assert description.locator("code", has_text="locale").count() >= 1
            assert "``" not in description.inner_text()
        finally:
            browser.close()
