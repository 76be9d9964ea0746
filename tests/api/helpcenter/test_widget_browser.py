"""The widget page of docs/help-center.md ("Widget"), exactly as written there (the API address,
org and key filled in; ``<html lang>`` set per language), in a real headless Chromium, served
from another origin than the API (``faq serve``), against a real org (issue 41):

- typing a question shows the org's answers (snippets, "Best answer", a link to the help
  center's page in the reader's language), "Was this helpful?" records a vote;
- keyboard: Enter opens it with the cursor in the box, the arrows move through the results,
  Escape closes it and gives the focus back; the result count is announced (a status region);
- axe-core finds no serious or critical violation in English, French and Arabic (right to
  left), nothing is requested from a third host, and the page's strict CSP holds;
- bad attributes (no key, a secret key, a wrong org) show a message in the widget, no error
  on the page.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.api.helpcenter.test_a11y_languages import serious
from tests.api.helpcenter.test_embed_example import Site
from tests.fixtures.live_server import LiveServer, live_server, org_with_admin_key  # noqa: F401

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[3] / "docs" / "help-center.md"
DOC_API = "https://faq.example.com"
DOC_KEY = "faq_pk_your_publishable_key"


def widget_page(api: str, org: str, key: str | None, lang: str = "en") -> str:
    """The documented page with these values (``key=None``: its ``data-key`` removed)."""
    [html] = re.findall(r"```html widget\n(.*?)```", DOC.read_text(), flags=re.S)
    assert html.count(DOC_API) == 3, "the page names the API in the script and in its CSP"
    html = html.replace(DOC_API, api)
    html, count = re.subn(r'data-org="[^"]*"', f'data-org="{org}"', html)
    assert count == 1
    assert html.count(f'data-key="{DOC_KEY}"') == 1
    html = html.replace(f' data-key="{DOC_KEY}"', "" if key is None else f' data-key="{key}"')
    direction = ' dir="rtl"' if lang == "ar" else ""
    html, count = re.subn(r'<html lang="en">', f'<html lang="{lang}"{direction}>', html)
    assert count == 1
    return html


@dataclass(frozen=True)
class Org:
    base: str
    slug: str
    admin_key: str
    public_key: str
    track: dict[str, Any]  # the question "How do I track my order?"


def call(base: str, slug: str, key: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{base}/api/v1/{slug}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read() or b"null")


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    served = Site()
    try:
        yield served
    finally:
        served.server.shutdown()


@pytest.fixture(scope="module")
def org(live_server: LiveServer, site: Site) -> Org:  # noqa: F811
    """An org of its own on the live server: en, fr, ar, the help center on, two published
    questions (one translated into French), a draft, and a publishable key for the site."""
    base = live_server.base_url
    slug, admin = org_with_admin_key("widget", "ENTERPRISE")

    def api(method: str, path: str, body: Any = None) -> Any:
        return call(base, slug, admin, method, path, body)

    api("PATCH", "/settings", {"locales": ["en", "fr", "ar"]})
    api("PATCH", "/settings", {"helpCenter": {"enabled": True, "primaryColor": "#0b5d4b"}})
    orders = api("POST", "/categories", {"name": "Orders"})["data"]
    track = api("POST", "/questions", {
        "title": "How do I track my order?",
        "answer": "Open **Orders**, then choose *Track* next to the order you placed.",
        "categoryId": orders["id"], "status": "published",
    })["data"]  # fmt: skip
    api("PUT", f"/questions/{track['id']}/translations/fr", {
        "title": "Comment suivre ma commande ?",
        "answer": "Ouvrez **Commandes**, puis choisissez *Suivre* à côté de la commande.",
        "status": "published",
    })  # fmt: skip
    api("POST", "/questions", {
        "title": "How do I return an item?", "answer": "Within 30 days, from your account.",
        "categoryId": orders["id"], "status": "published",
    })  # fmt: skip
    api("POST", "/questions", {
        "title": "How do I track a lost parcel?", "answer": "Draft: not for readers.",
        "categoryId": orders["id"], "status": "draft",
    })  # fmt: skip
    key = api("POST", "/keys", {
        "name": "website", "scopes": ["public"], "allowedOrigins": [site.origin],
    })["data"]["key"]  # fmt: skip
    return Org(base, slug, admin, key, track)


@dataclass
class Visit:
    page: Page
    requested: list[str]
    errors: list[str]


@pytest.fixture
def visit(chromium: Browser) -> Iterator[Any]:
    contexts = []

    def open_page(site: Site, html: str) -> Visit:
        site.page = html.encode()
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = context.new_page()
        seen = Visit(page, [], [])
        page.on("request", lambda r: seen.requested.append(r.url))
        page.on("pageerror", lambda e: seen.errors.append(str(e)))
        page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{site.origin}/help.html", wait_until="load")
        return seen

    try:
        yield open_page
    finally:
        for context in contexts:
            context.close()


def focused(page: Page) -> str:
    """What has the focus inside the widget: its tag, id or text."""
    found: str = page.evaluate(
        """() => {
          const host = document.activeElement;
          const inner = host && host.shadowRoot ? host.shadowRoot.activeElement : null;
          if (!inner) return host ? host.tagName : "";
          return inner.tagName + ":" + (inner.id || inner.textContent.trim());
        }"""
    )
    return found


LABELS = {
    "en": ("Help", "Results found: 1", "Best answer", "Was this helpful?", "Thank you"),
    "fr": ("Aide", "Résultats trouvés\u00a0: 1", "Meilleure réponse", "utile", "Merci"),
    "ar": ("مساعدة", "عدد النتائج: 1", "أفضل إجابة", "هل كان هذا مفيدًا؟", "شكرًا"),
}
QUERIES = {"en": "track my order", "fr": "suivre ma commande", "ar": "track my order"}
TITLES = {"en": "How do I track my order?", "fr": "Comment suivre ma commande ?"}


@pytest.mark.parametrize("lang", ["en", "fr", "ar"])
def test_the_documented_page_answers_as_the_reader_types(
    site: Site, org: Org, visit: Any, lang: str
) -> None:
    seen = visit(site, widget_page(org.base, org.slug, org.public_key, lang))
    page = seen.page
    help_label, count, best, helpful, thanks = LABELS[lang]
    launcher = page.locator("faq-widget .launcher")
    expect(launcher).to_have_text(help_label)
    # The one tag put the widget right after itself, in the page's <main>.
    assert page.locator("main > script + faq-widget").count() == 1
    frame = page.locator("faq-widget .faq")
    assert frame.get_attribute("dir") == ("rtl" if lang == "ar" else "ltr")
    assert frame.get_attribute("lang") == lang
    # Keyboard: Tab to the button, Enter opens it with the cursor in the search box.
    page.keyboard.press("Tab")
    assert focused(page) == f"BUTTON:{help_label}"
    page.keyboard.press("Enter")
    expect(page.locator("faq-widget .panel")).to_be_visible()
    assert focused(page).startswith("INPUT:")
    assert launcher.get_attribute("aria-expanded") == "true"
    page.keyboard.type(QUERIES[lang], delay=20)
    results = page.locator("faq-widget .result")
    expect(results).to_have_count(1, timeout=15_000)
    status = page.locator("faq-widget [role=status]").first
    expect(status).to_have_text(count)
    first = results.first
    title = first.locator("h3 a")
    expect(title).to_have_text(TITLES.get(lang, TITLES["en"]))
    expect(first.locator(".badge")).to_have_text(best)
    expect(first.locator("mark").first).to_be_visible()  # the matched words, marked
    served = "fr" if lang == "fr" else "en"  # no Arabic translation: its own language
    assert title.get_attribute("href") == (
        f"{org.base}/hc/{org.slug}/{served}/questions/{org.track['slug']}"
    )
    expect(first.locator(".vote")).to_contain_text(helpful)
    # The arrows go to the result's title and back; axe with the results shown.
    page.keyboard.press("ArrowDown")
    assert focused(page) == f"A:{title.get_attribute('id')}"
    # The answer of a later keystroke draws the list again: the reader keeps their place.
    page.evaluate("q => document.querySelector('faq-widget').search(q)", QUERIES[lang] + " ")
    assert focused(page) == f"A:{title.get_attribute('id')}"
    assert serious(page) == [], lang
    page.keyboard.press("ArrowUp")
    assert focused(page).startswith("INPUT:")
    # "Was this helpful?": the vote reaches the API with the key, the thanks take its place.
    with page.expect_response(lambda r: r.url.endswith("/votes")) as voted:
        first.locator(".vote button").first.click()
    assert voted.value.status == 200
    assert voted.value.request.post_data_json == {"helpful": True, "locale": served}
    expect(first.locator(".thanks")).to_contain_text(thanks)
    # Escape closes it and gives the focus back to the button.
    page.keyboard.press("Escape")
    expect(page.locator("faq-widget .panel")).to_be_hidden()
    assert focused(page) == f"BUTTON:{help_label}"
    assert launcher.get_attribute("aria-expanded") == "false"
    assert serious(page) == [], lang
    others = [u for u in seen.requested if not u.startswith((site.origin, org.base))]
    assert others == []
    assert seen.errors == []


def test_typing_debounces_and_a_question_without_answers_says_so(
    site: Site, org: Org, visit: Any
) -> None:
    seen = visit(site, widget_page(org.base, org.slug, org.public_key))
    page = seen.page
    page.locator("faq-widget .launcher").click()
    page.locator("faq-widget input").press_sequentially("zzqx wwvvkk", delay=30)
    expect(page.locator("faq-widget [role=status]").first).to_have_text(
        "No results for this search. Try other words.", timeout=15_000
    )
    assert page.locator("faq-widget .result").count() == 0
    asked = [u for u in seen.requested if "/answers?" in u]
    assert 1 <= len(asked) <= 3, asked  # not one request per key stroke
    # A draft is never an answer, though its title matches best.
    page.locator("faq-widget input").fill("lost parcel")
    page.wait_for_timeout(1500)
    titles = page.locator("faq-widget .result h3").all_inner_texts()
    assert "How do I track a lost parcel?" not in titles
    assert seen.errors == []


MISSING = "This help widget is not set up: it needs"
UNREACHABLE = (
    "The help service could not be reached, or does not accept this site, organization or key."
)


def test_bad_attributes_show_a_message_in_the_widget(site: Site, org: Org, visit: Any) -> None:
    # No key.
    seen = visit(site, widget_page(org.base, org.slug, None))
    problem = seen.page.locator("faq-widget .problem")
    expect(problem).to_contain_text(MISSING)
    expect(problem).to_contain_text("data-key")
    assert seen.page.locator("faq-widget .launcher").count() == 0
    expect(seen.page.locator("h1")).to_have_text("How can we help?")  # the page is whole
    assert seen.errors == []
    # A secret key: refused, and never sent anywhere.
    seen = visit(site, widget_page(org.base, org.slug, org.admin_key))
    expect(seen.page.locator("faq-widget .problem")).to_contain_text("cannot use a secret key")
    assert [u for u in seen.requested if "/api/" in u] == []
    assert seen.errors == []
    # An org that does not exist (or is not the key's): the box says the service refused.
    seen = visit(site, widget_page(org.base, "no-such-org", org.public_key))
    seen.page.locator("faq-widget .launcher").click()
    seen.page.locator("faq-widget input").fill("track my order")
    status = seen.page.locator("faq-widget [role=status]").first
    expect(status).to_have_text(UNREACHABLE, timeout=15_000)
    assert seen.page.locator("faq-widget .result").count() == 0
    # The browser itself reports the refused CORS request; the page has no script error.
    assert not [e for e in seen.errors if "CORS" not in e and "Failed to load" not in e]


def test_a_key_for_other_origins_is_refused_by_the_browser(
    site: Site, org: Org, visit: Any
) -> None:
    other = call(org.base, org.slug, org.admin_key, "POST", "/keys", {
        "name": "elsewhere", "scopes": ["public"], "allowedOrigins": ["https://elsewhere.example"],
    })["data"]["key"]  # fmt: skip
    seen = visit(site, widget_page(org.base, org.slug, other))
    seen.page.locator("faq-widget .launcher").click()
    seen.page.locator("faq-widget input").fill("track my order")
    expect(seen.page.locator("faq-widget [role=status]").first).to_have_text(
        UNREACHABLE, timeout=15_000
    )
    assert seen.page.locator("faq-widget .result").count() == 0


def test_the_widget_takes_the_orgs_colour_with_readable_text(
    site: Site, org: Org, visit: Any
) -> None:
    html = widget_page(org.base, org.slug, org.public_key).replace("#1f5fbf", "#ffd60a")
    seen = visit(site, html)
    launcher = seen.page.locator("faq-widget .launcher")
    colors = launcher.evaluate(
        "(b) => [getComputedStyle(b).backgroundColor, getComputedStyle(b).color]"
    )
    assert colors == ["rgb(255, 214, 10)", "rgb(0, 0, 0)"]  # black reads on yellow
    assert serious(seen.page) == []


def test_an_element_of_its_own_takes_its_own_locale_beside_the_tags_widget(
    site: Site, org: Org, visit: Any
) -> None:
    element = f'<faq-widget org="{org.slug}" key="{org.public_key}" locale="fr"></faq-widget>'
    html = widget_page(org.base, org.slug, org.public_key).replace("</main>", element + "</main>")
    seen = visit(site, html)
    widgets = seen.page.locator("faq-widget")
    expect(widgets).to_have_count(2)
    english, french = widgets.nth(0), widgets.nth(1)
    expect(english.locator(".launcher")).to_have_text("Help")
    expect(french.locator(".launcher")).to_have_text("Aide")
    french.locator(".launcher").click()
    french.locator("input").fill("suivre ma commande")
    expect(french.locator(".result h3")).to_have_text(
        ["Comment suivre ma commande ?"], timeout=15_000
    )
    assert english.locator(".panel").is_hidden()  # each widget is its own
    # Escape with the focus back on the button (not in the panel) closes it too.
    french.locator(".launcher").focus()
    seen.page.keyboard.press("Escape")
    expect(french.locator(".panel")).to_be_hidden()
    assert serious(seen.page) == []
    assert seen.errors == []


def test_a_key_that_is_not_a_key_is_named(site: Site, org: Org, visit: Any) -> None:
    seen = visit(site, widget_page(org.base, org.slug, "not-a-key"))
    problem = seen.page.locator("faq-widget .problem")
    expect(problem).to_contain_text(MISSING)
    expect(problem).to_contain_text("faq_pk_")
    assert [u for u in seen.requested if "/api/" in u] == []
