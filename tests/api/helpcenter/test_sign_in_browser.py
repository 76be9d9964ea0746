"""Readers signing in to a private help center (issue 39), in a real headless Chromium against
the live app (`faq serve`), in English, French and Arabic (right to left):

- an anonymous visitor of any page of a private help center lands on the sign-in page, in the
  language of the page they asked for, which shows nothing of the content;
- its "Sign in" goes to the org's own application (another origin, served here), which sends
  the reader back with a reader JWT signed by PyJWT (``/hc/{org}/access/jwt``): the reader
  lands on the question restricted to their audience, "Signed in as …" in the header;
- "Sign out" ends the session: the sign-in page again, the restricted question no longer shown;
- a forged token, and a sign-in link used twice, show the problem box (401);
- a public help center with a way in offers "Sign in" in its header, beside the languages;
- axe-core finds no serious or critical violation on any of these pages, light or dark, and
  their layout holds on a desktop and a phone, mirrored in Arabic.

``FAQ_SCREENSHOTS=<folder>`` saves a screenshot of each page there.
"""

from __future__ import annotations

import http.server
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Literal
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
from playwright.sync_api import Browser, Page

from api.helpcenter.i18n import Labels
from tenancy.embedded import free_port
from tests.api.helpcenter.conftest import BrowserPage
from tests.api.helpcenter.test_a11y_languages import layout_holds, screenshot, serious, text_span
from tests.api.helpcenter.test_i18n import english_left
from tests.api.helpcenter.test_widget_browser import call
from tests.fixtures.live_server import LiveServer, live_server, org_with_admin_key  # noqa: F401

pytestmark = pytest.mark.slow

LANGUAGES = ("en", "fr", "ar")
BROWSER_LOCALES = {"en": "en-US", "fr": "fr-FR", "ar": "ar"}
READERS = {"en": "Ann Lee", "fr": "Anne Dupont", "ar": "أمينة حداد"}
AUDIENCE = "partners"
Scheme = Literal["light", "dark"]
PUBLIC = {
    "en": ("How do I track my order?", "Open **Orders**, then choose *Track*."),
    "fr": ("Comment suivre ma commande ?", "Ouvrez **Commandes**, puis choisissez *Suivre*."),
    "ar": ("كيف أتتبّع طلبي؟", "افتح **الطلبات**، ثم اختر *تتبّع*."),
}
RESTRICTED = {
    "en": ("What discount do partners get?", "Partners get **15%** off every order."),
    "fr": (
        "Quelle remise pour les partenaires ?",
        "Les partenaires bénéficient de **15 %** de remise sur chaque commande.",
    ),
    "ar": ("ما الخصم الذي يحصل عليه الشركاء؟", "يحصل الشركاء على خصم **15٪** على كل طلب."),
}


class OrgApp:
    """The org's own application, on another origin: its sign-in page (``helpCenter.
    signInUrl``) signs the current reader in as docs/audiences.md tells an org to, by sending
    them to ``/hc/{org}/access/jwt`` with a reader JWT and the ``return_to`` it was given."""

    def __init__(self) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.help_center = ""  # http://127.0.0.1:port/hc/{org}
        self.slug = ""
        self.secret = ""
        self.reader = READERS["en"]
        self.sent: list[str] = []  # every sign-in link it redirected to
        app = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                link = sign_in_link(app, app.reader, query["return_to"][0])
                app.sent.append(link)
                self.send_response(302)
                self.send_header("Location", link)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def reader_token(app: OrgApp, name: str, *, secret: str | None = None) -> str:
    now = int(time.time())
    claims = {
        "sub": f"user-{uuid.uuid4().hex[:8]}",
        "name": name,
        "audiences": [AUDIENCE],
        "iat": now,
        "exp": now + 600,
        "aud": app.slug,
        "jti": uuid.uuid4().hex,  # two links made in the same second differ
    }
    key = app.secret if secret is None else secret
    return jwt.encode(claims, key, algorithm="HS256", headers={"kid": "app"})


def sign_in_link(app: OrgApp, name: str, return_to: str, *, secret: str | None = None) -> str:
    token = reader_token(app, name, secret=secret)
    return f"{app.help_center}/access/jwt?{urlencode({'token': token, 'return_to': return_to})}"


@dataclass(frozen=True)
class PrivateSite:
    base: str  # http://127.0.0.1:port/hc/{org}
    origin: str
    slug: str
    app: OrgApp
    public: str  # the questions' slugs
    restricted: str

    def path(self, locale: str, slug: str) -> str:
        return f"{urlsplit(self.base).path}/{locale}/questions/{slug}"

    def sign_in_page(self, return_to: str | None = None) -> str:
        query = f"?{urlencode({'return_to': return_to})}" if return_to else ""
        return f"{self.base}/access{query}"


@pytest.fixture(scope="module")
def org_app() -> Iterator[OrgApp]:
    app = OrgApp()
    try:
        yield app
    finally:
        app.server.shutdown()


@pytest.fixture(scope="module")
def site(live_server: LiveServer, org_app: OrgApp) -> PrivateSite:  # noqa: F811
    """An org of its own: en, fr, ar; an audience; a reader key; a private help center whose
    sign-in page is ``org_app``'s; a public question and one for the audience, translated."""
    base = live_server.base_url
    slug, admin = org_with_admin_key("signin", "ENTERPRISE")
    api = partial(call, base, slug, admin)
    api("PATCH", "/settings", {"locales": ["en", "fr", "ar"]})
    api("POST", "/audiences", {"name": "Partners", "slug": AUDIENCE})
    keys = api("PUT", "/settings/readers", {"keys": [{"kid": "app", "alg": "HS256"}]})
    org_app.slug, org_app.secret = slug, keys["data"]["keys"][0]["secret"]
    org_app.help_center = f"{base}/hc/{slug}"
    api("PATCH", "/settings", {"helpCenter": {
        "enabled": True, "title": "Acme Partner Help", "primaryColor": "#0b5d4b",
        "access": "signed-in", "signInUrl": f"{org_app.origin}/sign-in",
        "headerLinks": [{"label": "acme.example", "url": "https://acme.example"}],
    }})  # fmt: skip
    orders = api("POST", "/categories", {"name": "Orders"})["data"]
    made = {}
    for name, texts, audiences in (("public", PUBLIC, []), ("restricted", RESTRICTED, [AUDIENCE])):
        title, answer = texts["en"]
        made[name] = api("POST", "/questions", {
            "title": title, "answer": answer, "categoryId": orders["id"],
            "status": "published", "audiences": audiences,
        })["data"]  # fmt: skip
        for locale in ("fr", "ar"):
            title, answer = texts[locale]
            api("PUT", f"/questions/{made[name]['id']}/translations/{locale}", {
                "title": title, "answer": answer, "status": "published",
            })  # fmt: skip
    return PrivateSite(
        org_app.help_center,
        base,
        slug,
        org_app,
        made["public"]["slug"],
        made["restricted"]["slug"],
    )


@dataclass
class Reader:
    """A reader's browser (its own cookies), in a language, on a screen of some width."""

    page: Page
    recorded: BrowserPage
    locale: str
    _: Labels = field(init=False)

    def __post_init__(self) -> None:
        self._ = Labels(self.locale)

    def open(self, url: str) -> int:
        response = self.page.goto(url, wait_until="load")
        assert response is not None
        return response.status


@contextmanager
def reader_browser(
    chromium: Browser, locale: str, width: int = 1280, scheme: Scheme = "light"
) -> Iterator[Reader]:
    context = chromium.new_context(
        viewport={"width": width, "height": 900},
        locale=BROWSER_LOCALES[locale],
        color_scheme=scheme,
    )
    try:
        page = context.new_page()
        recorded = BrowserPage(page)
        page.on("request", lambda r: recorded.requested.append(r.url))
        yield Reader(page, recorded, locale)
    finally:
        context.close()


def assert_sign_in_page(reader: Reader) -> None:
    """The page is the sign-in page of the private help center, in the reader's language,
    showing none of its questions, with no serious or critical axe violation."""
    page, _ = reader.page, reader._
    assert page.locator("html").get_attribute("lang") == reader.locale
    assert page.locator("html").get_attribute("dir") == ("rtl" if reader.locale == "ar" else "ltr")
    assert page.locator("main h1").inner_text() == _("Sign in")
    lead = _("This help center is for signed-in readers. Sign in to continue.")
    assert page.locator("main .lead").inner_text() == lead
    assert page.locator("form[role=search]").count() == 0  # nothing to search for anonymously
    html = page.content()
    for texts in (PUBLIC, RESTRICTED):
        for title, _answer in texts.values():
            assert title not in html
    if reader.locale != "en":
        assert english_left(html, reader.locale) == [], reader.locale
    assert serious(page) == [], (reader.locale, page.url)
    layout_holds(page)


@pytest.mark.parametrize("locale", LANGUAGES)
def test_a_reader_signs_in_reads_the_restricted_question_and_signs_out(
    site: PrivateSite, chromium: Browser, locale: str
) -> None:
    site.app.reader = READERS[locale]
    restricted = site.path(locale, site.restricted)
    with reader_browser(chromium, locale) as reader:
        page, _ = reader.page, reader._
        # Anonymous: any page of the private help center is the sign-in page.
        for asked in (f"/hc/{site.slug}/{locale}", site.path(locale, site.public), restricted):
            assert reader.open(f"{site.origin}{asked}") == 200
            assert page.url == site.sign_in_page(asked), asked
            assert_sign_in_page(reader)
        screenshot(page, f"{locale}-sign-in")

        # "Sign in": the org's application, then back with a reader token, on the question
        # asked for last.
        page.locator("main").get_by_role("link", name=_("Sign in"), exact=True).click()
        page.wait_for_url(f"{site.origin}{restricted}")
        # The org's application was given the question's address to come back to.
        assert parse_qs(urlsplit(site.app.sent[-1]).query)["return_to"] == [
            f"{site.origin}{restricted}"
        ]
        title, answer = RESTRICTED[locale]
        assert page.locator("main h1").inner_text() == title
        assert page.locator("article strong").inner_text() == answer.split("**")[1]
        account = page.locator("header .account")
        signed_in_as = _("Signed in as %(name)s", name=READERS[locale])
        assert account.get_by_text(signed_in_as, exact=True).count() == 1
        assert page.locator("html").get_attribute("lang") == locale
        assert serious(page) == [], (locale, "signed in")
        layout_holds(page)
        screenshot(page, f"{locale}-signed-in")
        assert reader.open(f"{site.origin}{site.path(locale, site.public)}") == 200
        assert page.locator("main h1").inner_text() == PUBLIC[locale][0]
        # The account page says who is signed in.
        assert reader.open(site.sign_in_page(restricted)) == 200
        assert page.locator("main h1").inner_text() == _("Account")
        assert page.locator("main").get_by_text(signed_in_as, exact=True).count() == 1
        assert serious(page) == [], (locale, "account")

        # "Sign out" in the header: the sign-in page, and the question is shown no more.
        assert reader.open(f"{site.origin}{restricted}") == 200
        account.get_by_role("button", name=_("Sign out"), exact=True).click()
        page.wait_for_url(site.sign_in_page(restricted))  # in the page's language, to come back
        assert page.locator("main .sign-in-options a").count() == 1
        assert page.locator("header .account").count() == 0
        assert title not in page.content()
        assert serious(page) == [], (locale, "signed out")
        assert reader.open(f"{site.origin}{restricted}") == 200
        assert page.url == site.sign_in_page(restricted)
        assert_sign_in_page(reader)
        # Nothing was requested from a third host: only the org's own sign-in page.
        outside = reader.recorded.outside(site.origin)
        assert outside and all(u.startswith(f"{site.app.origin}/sign-in?") for u in outside)


@pytest.mark.parametrize("locale", ["fr", "ar"])
def test_the_sign_in_page_without_a_return_to_speaks_the_browsers_language(
    site: PrivateSite, chromium: Browser, locale: str
) -> None:
    with reader_browser(chromium, locale) as reader:
        assert reader.open(site.sign_in_page()) == 200
        assert_sign_in_page(reader)


@pytest.mark.parametrize("locale", LANGUAGES)
def test_a_bad_sign_in_link_shows_the_problem_box(
    site: PrivateSite, chromium: Browser, locale: str
) -> None:
    restricted = site.path(locale, site.restricted)
    used = sign_in_link(site.app, READERS[locale], restricted)
    forged = sign_in_link(site.app, READERS[locale], restricted, secret="rdsec_" + "x" * 40)
    with reader_browser(chromium, locale) as reader:
        page, _ = reader.page, reader._
        assert reader.open(used) == 200  # signs in, then out
        assert page.url == f"{site.origin}{restricted}"
        page.locator("header .account").get_by_role("button", name=_("Sign out")).click()
        page.wait_for_url(site.sign_in_page(restricted))
        for link, why in ((forged, "signature"), (used, "used to sign in already")):
            assert reader.open(link) == 401
            problem = page.locator("main .problem[role=alert]")
            assert problem.locator("strong").inner_text() == _("This sign-in link is not valid")
            message = _("It may have expired or been used already. Please sign in again.")
            assert problem.get_by_text(message, exact=True).count() == 1
            assert why in problem.locator("[lang=en]").inner_text()
            assert_sign_in_page(reader)
            screenshot(page, f"{locale}-problem")
            # No session was started: the question still sends the reader to sign in.
            assert reader.open(f"{site.origin}{restricted}") == 200
            assert page.url == site.sign_in_page(restricted)


def boxes_apart(page: Page, selector: str) -> None:
    """No two of ``selector``'s elements overlap on the screen."""
    boxes = [b for b in (e.bounding_box() for e in page.locator(selector).all()) if b]
    assert len(boxes) >= 2, selector
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x"] + a["width"] <= b["x"] + 0.5
                or b["x"] + b["width"] <= a["x"] + 0.5
                or a["y"] + a["height"] <= b["y"] + 0.5
                or b["y"] + b["height"] <= a["y"] + 0.5
            )
            assert apart, (selector, a, b)


def starts_on_the_side_of(reader: Reader, selector: str, width: int) -> None:
    """``selector``'s text starts on the left in English, on the right in Arabic."""
    left, right = text_span(reader.page, selector)
    if reader.locale == "ar":
        assert right > width * 0.6, (selector, width, left, right)
    else:
        assert left < width * 0.4, (selector, width, left, right)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_sign_in_pages_hold_on_a_desktop_and_a_phone_mirrored_in_arabic(
    site: PrivateSite, chromium: Browser, width: int
) -> None:
    device = "phone-" if width == 390 else ""
    for locale in ("en", "ar"):
        schemes: tuple[Scheme, ...] = ("light", "dark")
        for scheme in schemes:
            mode = "dark-" if scheme == "dark" else ""
            restricted = site.path(locale, site.restricted)
            with reader_browser(chromium, locale, width, scheme) as reader:
                page = reader.page
                assert reader.open(f"{site.origin}{restricted}") == 200
                assert_sign_in_page(reader)
                starts_on_the_side_of(reader, "main h1", width)
                starts_on_the_side_of(reader, "main .lead", width)
                screenshot(page, f"{locale}-{device}{mode}sign-in")

                forged = sign_in_link(site.app, READERS[locale], restricted, secret="nope" * 10)
                assert reader.open(forged) == 401
                starts_on_the_side_of(reader, "main .problem strong", width)
                assert_sign_in_page(reader)
                screenshot(page, f"{locale}-{device}{mode}problem")

                assert reader.open(sign_in_link(site.app, READERS[locale], restricted)) == 200
                assert page.url == f"{site.origin}{restricted}"
                assert serious(page) == [], (locale, width, scheme)
                layout_holds(page)
                # The header's parts (title, links, languages, account) side by side or
                # wrapped, never on top of each other; the account part inside the header.
                boxes_apart(page, "header .bar > *")
                boxes_apart(page, "header .account > *")
                header = page.locator("header.site").bounding_box()
                account = page.locator("header .account").bounding_box()
                assert header is not None and account is not None
                assert account["y"] + account["height"] <= header["y"] + header["height"]
                starts_on_the_side_of(reader, "header .brand", width)
                screenshot(page, f"{locale}-{device}{mode}signed-in")


@pytest.fixture(scope="module")
def public_site(live_server: LiveServer, org_app: OrgApp) -> str:  # noqa: F811
    """An org whose help center is public (en, ar) and has a way in: its home page's URL."""
    slug, admin = org_with_admin_key("signinpub", "ENTERPRISE")
    api = partial(call, live_server.base_url, slug, admin)
    api("PATCH", "/settings", {"locales": ["en", "ar"]})
    api("PUT", "/settings/readers", {"keys": [{"kid": "app", "alg": "HS256"}]})
    api("PATCH", "/settings", {"helpCenter": {
        "enabled": True, "title": "Acme Help", "signInUrl": f"{org_app.origin}/sign-in",
    }})  # fmt: skip
    orders = api("POST", "/categories", {"name": "Orders"})["data"]
    api("POST", "/questions", {
        "title": PUBLIC["en"][0], "answer": PUBLIC["en"][1], "categoryId": orders["id"],
        "status": "published",
    })  # fmt: skip
    return f"{live_server.base_url}/hc/{slug}"


@pytest.mark.parametrize("width", [1280, 390])
def test_a_public_help_centers_header_offers_to_sign_in(
    public_site: str, chromium: Browser, width: int
) -> None:
    for locale in ("en", "ar"):
        with reader_browser(chromium, locale, width) as reader:
            page, _ = reader.page, reader._
            assert reader.open(f"{public_site}/{locale}") == 200
            sign_in = page.locator("header a.account")
            assert sign_in.inner_text() == _("Sign in")
            # Beside the languages, at the end of the header's row (the title at its start).
            boxes_apart(page, "header .bar > *")
            starts_on_the_side_of(reader, "header .brand", width)
            langs, account = page.locator("header .langs").bounding_box(), sign_in.bounding_box()
            assert langs is not None and account is not None
            if width == 1280:
                assert abs(langs["y"] - account["y"]) < 8, (langs, account)
                gap = langs["x"] - account["x"] - account["width"]
                if locale == "en":
                    gap = account["x"] - langs["x"] - langs["width"]
                assert 0 < gap < 40, (locale, langs, account)
            assert serious(page) == [], (locale, width)
            layout_holds(page)
            screenshot(page, f"{locale}-{'phone-' if width == 390 else ''}public-header")
            sign_in.click()
            home_path = f"{urlsplit(public_site).path}/{locale}"
            page.wait_for_url(f"{public_site}/access?{urlencode({'return_to': home_path})}")
            assert page.locator("main h1").inner_text() == _("Sign in")
            assert page.locator("main .lead").count() == 0  # not private: no "signed-in only"
            assert page.locator("form[role=search]").count() == 1
            home = page.locator("main").get_by_role(
                "link", name=_("Go to the help center home page")
            )
            assert home.count() == 1
            assert serious(page) == [], (locale, width, "sign-in")
            layout_holds(page)
            screenshot(page, f"{locale}-{'phone-' if width == 390 else ''}public-sign-in")
