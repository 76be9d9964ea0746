"""Every page kind of the help center in a real headless Chromium with JavaScript off, as a
visitor reaches them by links (issue 41's pages): the home's central search and its category
cards, a category page with a section and its first questions, a question page with its date
and the contact link, a search, and a missing page. Nothing on them needs a script."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow


def api(server: LiveServer, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{server.org_slug}{path}",
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {server.admin_key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())["data"]
        return data


def test_every_page_kind_works_without_javascript(
    chromium: Browser,
    live_server: LiveServer,  # noqa: F811
) -> None:
    server = live_server
    billing = api(server, "POST", "/categories", {"name": "Billing", "description": "Money."})
    refunds = api(server, "POST", "/categories", {"name": "Refunds", "parentId": billing["id"]})
    api(
        server,
        "PATCH",
        "/settings",
        {"helpCenter": {"enabled": True, "contactUrl": "https://example.com/contact"}},
    )
    for n, title in enumerate(("How do I get a refund?", "When is my refund paid?")):
        api(
            server,
            "POST",
            "/questions",
            {
                "title": title,
                "answer": f"Within {30 - n} days.",
                "categoryId": refunds["id"],
                "status": "published",
            },
        )
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{server.base_url}/hc/{server.org_slug}/", wait_until="load")
        assert page.get_by_role("heading", name="How can we help?").count() == 1
        card = page.locator("main").get_by_role("link", name="Billing")
        assert card.count() >= 1
        card.first.click()
        page.wait_for_load_state("load")
        assert page.get_by_role("heading", name="Billing").count() >= 1
        assert "Refunds" in page.inner_text("main")
        page.locator("main").get_by_role("link", name="How do I get a refund?").first.click()
        page.wait_for_load_state("load")
        main = page.inner_text("main")
        assert "Within 30 days." in main
        assert page.locator("main time[datetime]").count() >= 1
        assert page.locator('a[href="https://example.com/contact"]').count() == 1
        search = page.get_by_role("searchbox").first
        search.fill("refund")
        search.press("Enter")
        page.wait_for_load_state("load")
        assert "When is my refund paid?" in page.inner_text("main")
        missing = page.goto(f"{server.base_url}/hc/{server.org_slug}/en/questions/no-such-page")
        assert missing is not None and missing.status == 404
        assert page.locator("main").count() == 1
    finally:
        context.close()
