""" "Was this helpful?" in a real headless Chromium against the real app (``faq serve``): vote No
with a reason and see the thanks; reach the Yes / No buttons with the keyboard alone (and vote
with it); the form works with JavaScript disabled."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page

from tests.api.helpcenter.conftest import BrowserPage
from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow

THANKS = "Thank you for your feedback"


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


@pytest.fixture(scope="module")
def question_url(live_server: LiveServer) -> str:  # noqa: F811
    api(live_server, "PATCH", "/settings", {"helpCenter": {"enabled": True}})
    category = api(live_server, "POST", "/categories", {"name": "Feedback in a browser"})
    question = api(
        live_server,
        "POST",
        "/questions",
        {
            "title": "How do I export my data?",
            "answer": "Open **Settings**, then *Export*.",
            "categoryId": category["id"],
            "status": "published",
        },
    )
    return f"{live_server.base_url}/hc/{live_server.org_slug}/en/questions/{question['slug']}"


def shows_thanks(page: Page) -> None:
    page.wait_for_url("**feedback=thanks**", timeout=10_000)
    assert page.url.endswith("?feedback=thanks#feedback")
    assert THANKS in page.locator("#feedback").inner_text()
    assert page.locator("#feedback form").count() == 0


def test_vote_no_with_a_reason_and_see_the_thanks(
    browser_page: BrowserPage,
    question_url: str,
    live_server: LiveServer,  # noqa: F811
) -> None:
    page = browser_page.page
    page.goto(question_url, wait_until="load")
    feedback = page.locator("#feedback")
    assert "Was this helpful?" in feedback.inner_text()
    reason = page.get_by_label("If not, what was missing? (optional)")
    reason.fill("It does not say which formats are offered.")
    page.get_by_role("button", name="No").click()
    shows_thanks(page)
    assert browser_page.outside(live_server.base_url) == []
    results = Axe().run(page)  # the thanks state too: no serious or critical violation
    bad = [
        (v["id"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert bad == []


def focused(page: Page) -> str:
    described: str = page.evaluate(
        "() => { const e = document.activeElement;"
        " return `${e.tagName.toLowerCase()}:${e.getAttribute('name') || ''}:"
        "${e.getAttribute('value') || ''}`; }"
    )
    return described


def test_the_keyboard_alone_reaches_the_vote_buttons_and_votes(
    browser_page: BrowserPage, question_url: str
) -> None:
    page = browser_page.page
    page.goto(question_url, wait_until="load")
    seen: list[str] = []
    for _ in range(60):
        page.keyboard.press("Tab")
        seen.append(focused(page))
        if seen[-1] == "button:helpful:no":
            break
    # Yes and No come first (issue 32), the "what was missing?" box after them.
    assert "textarea:reason:" not in seen, seen
    assert "button:helpful:yes" in seen, seen
    assert seen[-1] == "button:helpful:no", seen
    page.keyboard.press("Shift+Tab")
    assert focused(page) == "button:helpful:yes"
    page.keyboard.press("Enter")
    shows_thanks(page)


def test_the_form_works_without_javascript(chromium: Browser, question_url: str) -> None:
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(question_url, wait_until="load")
        page.get_by_role("button", name="Yes").click()
        shows_thanks(page)
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["hc_visitor"]["httpOnly"] and cookies["hc_visitor"]["sameSite"] == "Lax"
    finally:
        context.close()
