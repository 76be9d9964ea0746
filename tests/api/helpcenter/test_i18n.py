"""The help center's labels in the visitor's language (issue 32): a gettext catalog per language
(at least every language the search stems, and Arabic), every label of every page type
translated in every catalog language, the org's overrides per label and locale, and English
per label (never per page) for a language without a catalog."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from babel.messages.pofile import read_po

from api.helpcenter.i18n import LABELS, LOCALES_DIR, catalog_languages, translated
from api.search import CONFIGS
from billing.plans import Plan
from tests.api.helpcenter.helpers import category, enable, question, set_locales
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

TEMPLATES = Path(__file__).parents[3] / "api" / "helpcenter" / "templates" / "hc"
PLACEHOLDER = re.compile(r"%\(\w+\)s")
REQUIRED = sorted(set(CONFIGS) | {"ar"})
SHOWN_ATTRIBUTES = ("aria-label", "alt", "title", "placeholder")


class Texts(HTMLParser):
    """Every text node and every shown attribute (``aria-label``, ``alt``…) of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.texts.extend(v for k, v in attrs if k in SHOWN_ATTRIBUTES and v)

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.texts.append(" ".join(data.split()))


def texts_of(html: str) -> list[str]:
    parser = Texts()
    parser.feed(html)
    return parser.texts


def english_pattern(text: str) -> re.Pattern[str]:
    parts = [re.escape(" ".join(p.split())) for p in PLACEHOLDER.split(text)]
    return re.compile(".+".join(parts))


def english_left(html: str, tag: str) -> list[str]:
    """The English labels (whose translation in ``tag`` differs) found in the page."""
    found = []
    texts = texts_of(html)
    for english in LABELS.values():
        if translated(tag, english) == english:
            continue  # the same word in both languages ("Feedback" in German)
        pattern = english_pattern(english)
        found.extend(f"{english!r} in {t!r}" for t in texts if pattern.fullmatch(t))
        # A label inside a longer text node (the <title>: "Search: … · Site").
        static = max(PLACEHOLDER.split(english), key=len).strip()
        if len(static) > 12:
            found.extend(f"{english!r} in {t!r}" for t in texts if static in t)
    return found


def test_every_required_language_has_a_complete_catalog() -> None:
    assert set(REQUIRED) - {"en"} <= set(catalog_languages())  # English: the msgids
    for language in catalog_languages():
        path = LOCALES_DIR / language / "LC_MESSAGES" / "hc.po"
        with path.open("rb") as po:
            parsed = read_po(po)
        messages = {m.id: m for m in parsed if m.id}
        assert set(messages) == set(LABELS.values()), language
        for english, message in messages.items():
            assert isinstance(message.string, str) and message.string.strip(), (language, english)
            assert not message.fuzzy, (language, english)
            assert sorted(PLACEHOLDER.findall(message.string)) == sorted(
                PLACEHOLDER.findall(str(english))
            ), (language, english)
            assert translated(language, str(english)) == message.string


def test_no_template_holds_text_outside_a_label() -> None:
    """Every word a template shows goes through ``_()``: the templates, Jinja removed, hold
    no letter in a text node or a shown attribute."""
    jinja = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
    for path in sorted(TEMPLATES.glob("*.html")):
        bare = jinja.sub("", path.read_text(encoding="utf-8"))
        letters = [t for t in texts_of(bare) if re.search(r"[^\W\d_]", t)]
        assert letters == [], (path.name, letters)


async def _site(org: OrgClient) -> dict[str, Any]:
    await set_locales(org, ["en", *[t for t in REQUIRED if t != "en"]])
    await enable(org, title="Acme Help")
    parent = await category(org, "My account")
    child = await category(org, "Passwords", parent=parent["id"])
    q = await question(org, "Reset password", "Use the *link*.", categoryId=child["id"])
    gone = await question(org, "Old question", "Gone.", categoryId=child["id"])
    r = await org.delete(f"/questions/{gone['id']}", scope="write")
    assert r.status_code == 204
    return {"category": parent["slug"], "question": q["slug"], "gone": gone["slug"]}


def page_types(site: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {
        "home": ("", 200),
        "category": (f"/categories/{site['category']}", 200),
        "question": (f"/questions/{site['question']}", 200),
        "thanks": (f"/questions/{site['question']}?feedback=thanks", 200),
        "search": ("/search?q=password", 200),
        "search-none": ("/search?q=zzzzqqq", 200),
        "search-empty": ("/search", 200),
        "not-found": ("/questions/no-such-question", 404),
        "no-route": ("/no/such/page", 404),
        "gone": (f"/questions/{site['gone']}", 410),
    }


async def test_every_page_type_in_every_catalog_language_has_no_english_label(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.ENTERPRISE)
    site = await _site(org)
    for tag in REQUIRED:
        for name, (path, status) in page_types(site).items():
            r = await org.client.get(f"/hc/{org.slug}/{tag}{path}")
            html = await r.get_data(as_text=True)
            assert r.status_code == status, (tag, name)
            assert f'<html lang="{tag}"' in html, (tag, name)
            assert f'dir="{"rtl" if tag == "ar" else "ltr"}"' in html, (tag, name)
            if tag != "en":
                assert english_left(html, tag) == [], (tag, name)
    # The English pages do show the English labels (the check above is not vacuous).
    r = await org.client.get(f"/hc/{org.slug}/en/questions/{site['question']}")
    html = await r.get_data(as_text=True)
    assert "Was this helpful?" in html and "Search the help center" in html
    assert english_left(html, "fr") != []


async def test_a_language_without_a_catalog_falls_back_per_label(org: OrgClient) -> None:
    await set_locales(org, ["en", "ja"])
    await enable(org, labels={"searchLabel": {"ja": "ヘルプを検索"}})
    q = await question(org, "Reset password", "Use the link.")
    r = await org.client.get(f"/hc/{org.slug}/ja/questions/{q['slug']}")
    html = await r.get_data(as_text=True)
    assert r.status_code == 200 and '<html lang="ja"' in html
    texts = texts_of(html)
    assert "ヘルプを検索" in texts and "Search the help center" not in texts  # the override
    assert "Was this helpful?" in texts and "Yes" in texts  # English, label by label


async def test_an_org_overrides_labels_per_locale(org: OrgClient) -> None:
    await set_locales(org, ["en", "fr", "de"])
    labels = {
        "searchLabel": {"fr": "Votre question", "en": "Ask us anything"},
        "wasThisHelpful": {"en": "Did this answer your question?"},
    }
    await enable(org, labels=labels)
    q = await question(org, "Reset password", "Use the link.")
    pages = {}
    for tag in ("en", "fr", "de"):
        r = await org.client.get(f"/hc/{org.slug}/{tag}/questions/{q['slug']}")
        pages[tag] = texts_of(await r.get_data(as_text=True))
    assert "Ask us anything" in pages["en"] and "Did this answer your question?" in pages["en"]
    assert "Votre question" in pages["fr"]
    assert "Cette réponse vous a-t-elle été utile ?" in pages["fr"]  # the catalog, spaces folded
    assert "Im Hilfe-Center suchen" in pages["de"] and "War das hilfreich?" in pages["de"]
    r = await org.get("/settings")
    assert (await r.get_json())["data"]["helpCenter"]["labels"] == labels
    # Clearing an override goes back to the catalog at once (cached pages go with it).
    await enable(org, labels={"searchLabel": {"fr": None}})
    r = await org.client.get(f"/hc/{org.slug}/fr/questions/{q['slug']}")
    assert "Rechercher dans le centre d'aide" in texts_of(await r.get_data(as_text=True))


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        ({"noSuchLabel": {"en": "x"}}, "helpCenter.labels.noSuchLabel"),
        ({"searchLabel": "x"}, "helpCenter.labels.searchLabel"),
        ({"searchLabel": {"xx-nope-nope": "x"}}, "helpCenter.labels.searchLabel"),
        ({"searchLabel": {"en": "x" * 201}}, "helpCenter.labels.searchLabel.en"),
        ({"searchLabel": {"en": 3}}, "helpCenter.labels.searchLabel.en"),
        ([], "helpCenter.labels"),
        # Issue 42: an override is a template of its own label's placeholders, nothing more.
        ({"resultsFor": {"en": "%(q)50000000s"}}, "helpCenter.labels.resultsFor.en"),
        ({"resultsFor": {"en": "%(q)2000000000s"}}, "helpCenter.labels.resultsFor.en"),
        ({"resultsFor": {"en": "%(q).5s"}}, "helpCenter.labels.resultsFor.en"),
        ({"resultsFor": {"en": "%(q)r"}}, "helpCenter.labels.resultsFor.en"),
        ({"resultsFor": {"en": "%(count)s results"}}, "helpCenter.labels.resultsFor.en"),
        ({"resultCount": {"fr": "%d résultats"}}, "helpCenter.labels.resultCount.fr"),
        ({"searchButton": {"en": "100% search"}}, "helpCenter.labels.searchButton.en"),
    ],
)
async def test_a_bad_override_is_refused_and_changes_nothing(
    org: OrgClient, labels: Any, field: str
) -> None:
    before = (await (await org.get("/settings")).get_json())["data"]
    r = await org.patch("/settings", json={"helpCenter": {"enabled": True, "labels": labels}})
    assert r.status_code == 400
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_failed"
    assert [d["field"] for d in error["details"]] == [field]
    assert (await (await org.get("/settings")).get_json())["data"] == before


async def test_an_override_fills_only_its_own_placeholders(org: OrgClient) -> None:
    """Issue 42: ``%%`` is a percent sign, ``%(q)s`` the query (isolated), each as often as
    written; the page stays the size of the label, whatever the query."""
    labels = {
        "resultsFor": {"en": "100%% sure: %(q)s, %(q)s"},
        "searchButton": {"en": "Go 100%%"},
    }
    await enable(org, labels=labels)
    r = await org.client.get(f"/hc/{org.slug}/en/search", query_string={"q": "refund"})
    assert r.status_code == 200
    texts = texts_of(await r.get_data(as_text=True))
    assert "100% sure: \u2068refund\u2069, \u2068refund\u2069" in texts
    assert "Go 100%" in texts
    assert (await (await org.get("/settings")).get_json())["data"]["helpCenter"]["labels"] == (
        labels
    )


def test_a_stored_template_is_never_given_to_the_percent_operator() -> None:
    """An override stored before the check (or written to the row by hand) renders as
    written: no width is ever applied."""
    from api.helpcenter.i18n import Labels, substitute, template_problem

    hostile = Labels("en", {"resultsFor": {"en": "%(q)2000000000s %(q)s %d %%"}})
    out = hostile("Results for “%(q)s”", q="refund")
    assert out == "%(q)2000000000s \u2068refund\u2069 %d %"
    assert substitute("%(a)s%(b)s%%%", {"a": 1}) == "1%(b)s%%"
    assert template_problem("resultsFor", "Résultats pour « %(q)s »") is None
    assert template_problem("resultsFor", "%(q)5s") is not None
