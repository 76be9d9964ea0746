"""The pages people expect of a help center (issue 41), over HTTP: a home with a central search
under a headline in the visitor's language and category cards (name, description, how many
questions a visitor can see, an optional icon); "Popular questions" only from real views;
category pages with their sections' first questions; question pages with "Updated <date>" in
the visitor's locale; related questions that are related and in the page's language; "Still
need help?" after search results and answers; every URL form the docs print."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers.multilingual import embedders
from api.answers.vector_store import embed_questions
from api.helpcenter.i18n import catalog_languages, translated
from billing.plans import Plan
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tests.api.helpcenter.helpers import category, enable, question, set_locales, translate
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def page(org: OrgClient, path: str) -> tuple[int, str, Any]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, (await r.get_data()).decode(), r.headers


def between(body: str, start: str, end: str) -> str:
    """The part of ``body`` from ``start`` to the next ``end``."""
    at = body.index(start)
    return body[at : body.index(end, at)]


async def test_home_has_one_central_search_under_a_headline_in_the_visitors_language(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.ENTERPRISE)
    languages = catalog_languages()
    await set_locales(org, ["en", *languages])
    await enable(org)
    await question(org, "Where is my order?", "In transit.")
    status, body, _ = await page(org, "/en")
    assert status == 200
    hero = between(body, '<form class="search hero"', "</form>")
    assert '<h2 class="hero-title"><label for="q">How can we help?</label></h2>' in hero
    assert 'type="search"' in hero
    assert body.count('role="search"') == 1 and body.count('id="q"') == 1  # no second box
    for language in languages:
        headline = translated(language, "How can we help?")
        assert headline is not None and headline != "How can we help?", language
        status, body, _ = await page(org, f"/{language}")
        assert status == 200, language
        hero = between(body, '<form class="search hero"', "</form>")
        assert f'<label for="q">{html.escape(headline, quote=False)}</label>' in hero, language
    # The other pages keep the search box in the header, labelled as before.
    _, body, _ = await page(org, "/fr/search?q=order")
    assert "Rechercher dans le centre d&#39;aide" in body
    assert "hero" not in body


async def test_category_cards_show_name_description_visible_count_and_icon(
    org: OrgClient,
) -> None:
    await enable(org)
    shipping = await category(org, "Shipping")
    r = await org.patch(
        f"/categories/{shipping['id']}", json={"description": "Parcels and delays."}, scope="write"
    )
    assert r.status_code == 200
    returns = await category(org, "Returns", parent=shipping["id"])
    billing = await category(org, "Billing")
    await question(org, "Where is my parcel?", "On its way.", categoryId=shipping["id"])
    await question(org, "Is it late?", "Maybe.", categoryId=shipping["id"])
    await question(org, "Draft parcel", "x", status="draft", categoryId=shipping["id"])
    await question(org, "How do I return it?", "By post.", categoryId=returns["id"])
    await question(org, "Can I pay later?", "Yes.", categoryId=billing["id"])
    r = await org.patch("/settings", json={"helpCenter": {"categoryIcons": {shipping["id"]: "📦"}}})
    assert r.status_code == 200, await r.get_json()
    status, body, _ = await page(org, "/en")
    assert status == 200
    cards = between(body, '<ul class="cards">', "</section>")
    shipping_card = between(cards, '<li class="card">', f"/categories/{billing['slug']}")
    assert f'href="/hc/{org.slug}/en/categories/{shipping["slug"]}"' in shipping_card
    assert '<span class="icon" aria-hidden="true">📦</span><span>Shipping</span>' in shipping_card
    assert "Parcels and delays." in shipping_card
    # Its own two published questions and its section's one; never the draft.
    assert "Questions: 3" in shipping_card
    assert f"/categories/{returns['slug']}" in shipping_card  # its section, inside its card
    billing_card = cards[cards.index(f"/categories/{billing['slug']}") :]
    assert "Questions: 1" in billing_card and 'class="icon"' not in billing_card


async def test_category_icons_are_one_emoji_per_category_and_shown_in_settings(
    org: OrgClient, client: Any
) -> None:
    shipping = await category(org, "Shipping")
    cid = shipping["id"]
    for icons, where in (
        ({cid: "Box"}, f"helpCenter.categoryIcons.{cid}"),
        ({cid: "📦 box"}, f"helpCenter.categoryIcons.{cid}"),
        ({cid: "<b>"}, f"helpCenter.categoryIcons.{cid}"),
        ({cid: "📦" * 17}, f"helpCenter.categoryIcons.{cid}"),
        ({cid: 1}, f"helpCenter.categoryIcons.{cid}"),
        ({"shipping": "📦"}, "helpCenter.categoryIcons"),
        (["📦"], "helpCenter.categoryIcons"),
    ):
        r = await org.patch("/settings", json={"helpCenter": {"categoryIcons": icons}})
        assert r.status_code == 400, icons
        assert where in str(await r.get_json()), (icons, await r.get_json())
    family = "👩\u200d👩\u200d👧"  # joined by zero-width joiners: one icon
    r = await org.patch("/settings", json={"helpCenter": {"categoryIcons": {cid: family}}})
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["data"]["helpCenter"]["categoryIcons"] == {cid: family}
    r = await org.patch("/settings", json={"helpCenter": {"categoryIcons": {cid: None}}})
    assert (await r.get_json())["data"]["helpCenter"]["categoryIcons"] == {}
    r = await org.get("/settings")
    assert (await r.get_json())["data"]["helpCenter"]["categoryIcons"] == {}
    document = await (await client.get("/openapi.json")).get_json()
    fields = document["components"]["schemas"]["HelpCenterOut"]["properties"]
    assert "categoryIcons" in fields and "contactUrl" in fields


async def test_popular_questions_come_from_views_only(org: OrgClient, engine: AsyncEngine) -> None:
    await enable(org)
    viewed = await question(org, "Viewed question", "V.")
    await question(org, "Newest question", "N.")
    _, body, _ = await page(org, "/en")
    assert "Popular questions" not in body and "Newest question" not in body
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            text("INSERT INTO question_views_daily (question_id, day, views) VALUES (:q, :d, 4)"),
            {"q": viewed["id"], "d": utcnow().date()},
        )
    await category(org, "Bump")  # any write: the cached home goes
    _, body, _ = await page(org, "/en")
    popular = body[body.index('id="popular-title"') :]
    assert "Viewed question" in popular and "Newest question" not in popular


async def test_category_page_lists_its_sections_with_their_first_questions(
    org: OrgClient,
) -> None:
    await enable(org)
    account = await category(org, "Account")
    passwords = await category(org, "Passwords", parent=account["id"])
    profile = await category(org, "Profile", parent=account["id"])
    deep = await category(org, "Two-factor", parent=profile["id"])
    titles = ["Reset my password", "Change my password", "Password rules", "Forgot my email"]
    for title in titles:
        await question(org, title, "x", categoryId=passwords["id"])
    await question(
        org, "A draft password question", "x", status="draft", categoryId=passwords["id"]
    )
    await question(org, "Set up two-factor", "x", categoryId=deep["id"])
    status, body, _ = await page(org, f"/en/categories/{account['slug']}")
    assert status == 200
    sections = between(body, 'id="sub-title"', "</section>")
    first = between(sections, f"/categories/{passwords['slug']}", '<li class="section">')
    for title in titles[:3]:
        assert f">{title}</a>" in first, title
    assert "Forgot my email" not in body and "A draft password question" not in body
    see_all = f'href="/hc/{org.slug}/en/categories/{passwords["slug"]}">See all questions in'
    assert see_all in first
    # A section whose questions are all in its own sections: no preview, a link to see them.
    second = sections[sections.index(f"/categories/{profile['slug']}") :]
    assert "Set up two-factor" not in second
    assert f'/categories/{profile["slug"]}">See all questions in' in second
    # A section shown in full has no "see all".
    await question(org, "Only one", "x", categoryId=deep["id"])
    _, body, _ = await page(org, f"/en/categories/{profile['slug']}")
    deep_section = between(body, 'id="sub-title"', "</section>")
    assert "Set up two-factor" in deep_section and "Only one" in deep_section
    assert "See all questions in" not in deep_section


async def test_question_page_says_when_it_was_updated_in_the_visitors_locale(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await set_locales(org, ["en", "fr", "ar"])
    await enable(org)
    q = await question(org, "Dated question", "Yes.")
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            text("UPDATE questions SET updated_at = :at WHERE id = :id"),
            {"at": datetime(2026, 3, 5, 12, tzinfo=UTC), "id": q["id"]},
        )
    await category(org, "Bump")
    expected = {  # the date isolated from the label's direction (U+2068 ... U+2069)
        "en": "Updated \u2068March 5, 2026\u2069",
        "fr": "Mis à jour le \u20685 mars 2026\u2069",
        "ar": "آخر تحديث: \u20685 مارس 2026\u2069",
    }
    for locale, shown in expected.items():
        status, body, _ = await page(org, f"/{locale}/questions/{q['slug']}")
        assert status == 200
        assert f'<p class="updated"><time datetime="2026-03-05">{shown}' in body, locale


async def test_related_questions_are_related_and_in_the_pages_language(
    org: OrgClient, engine: AsyncEngine
) -> None:
    """A French question page lists French neighbours about the same thing, never an English
    one (untranslated) nor one that only shares a common word; an English page by meaning."""
    await set_locales(org, ["en", "fr"])
    await enable(org)
    french = {
        "How do I get a refund?": (
            "Comment obtenir un remboursement ?",
            "Demandez le remboursement depuis la page Commandes, sous 30 jours.",
        ),
        "How long does a refund take?": (
            "Combien de temps prend un remboursement ?",
            "Le remboursement arrive sur votre compte sous cinq jours ouvrés.",
        ),
        "Can I get a refund for a gift card?": (
            "Puis-je obtenir un remboursement pour une carte cadeau ?",
            "Les cartes cadeaux ne donnent pas droit à un remboursement.",
        ),
        "How do I change my password?": (
            "Comment changer mon mot de passe ?",
            "Ouvrez Réglages, puis Sécurité.",
        ),
        "What roles can team members have?": (
            "Quels rôles peuvent avoir les membres de l'équipe ?",
            "Administrateur, éditeur ou lecteur.",
        ),
        "What is Slotwise?": (
            "Qu'est-ce que Slotwise ?",
            "Slotwise est un outil de prise de rendez-vous en ligne.",
        ),
    }
    made: dict[str, dict[str, Any]] = {}
    for title, (fr_title, fr_answer) in french.items():
        made[title] = await question(org, title, f"{title} See the details.")
        await translate(org, made[title]["id"], "fr", fr_title, fr_answer, "published")
    english_only = await question(org, "Refund to another card", "A refund goes to the card used.")
    await question(org, "Do you sell my data?", "No, never.")
    ids = [q["id"] for q in made.values()] + [english_only["id"]]
    await embed_questions(engine, org.info.schema_name, ids, embedders())
    refund = made["How do I get a refund?"]
    status, body, _ = await page(org, f"/fr/questions/{refund['slug']}")
    assert status == 200
    related = between(body, 'id="related-title"', "</section>")
    assert "Combien de temps prend un remboursement ?" in related
    assert "Puis-je obtenir un remboursement pour une carte cadeau ?" in related
    for noise in (
        "Comment changer mon mot de passe ?",  # shares "comment", nothing more
        "Quels rôles peuvent avoir les membres",
        "Qu&#39;est-ce que Slotwise",
        "Qu'est-ce que Slotwise",
        "Refund to another card",  # about refunds, but in English
        "Do you sell my data?",
        "Comment obtenir un remboursement ?",  # never itself
    ):
        assert noise not in related, noise
    assert re.search(r"[A-Za-z]+ [a-z]+ [a-z]+\?</a>", related) is None  # no English title
    # A question with no neighbour: no section at all (none rather than noise).
    slotwise = made["What is Slotwise?"]
    _, body, _ = await page(org, f"/fr/questions/{slotwise['slug']}")
    assert 'id="related-title"' not in body
    _, body, _ = await page(org, f"/en/questions/{slotwise['slug']}")
    assert 'id="related-title"' not in body


async def test_still_need_help_links_to_the_contact_url_after_results_and_answers(
    org: OrgClient,
) -> None:
    await enable(org)
    q = await question(org, "Where is my order?", "In transit.")
    paths = (f"/en/questions/{q['slug']}", "/en/search?q=order", "/en/search?q=zzzzqqq")
    for path in paths:  # no contact URL: no link
        status, body, _ = await page(org, path)
        assert status == 200 and "Still need help?" not in body, path
    for bad in ("javascript:alert(1)", "mailto:help@acme.example", "/contact", "https://",
                "ftp://acme.example", "https:// acme.example", 42, "//acme.example"):  # fmt: skip
        r = await org.patch("/settings", json={"helpCenter": {"contactUrl": bad}})
        assert r.status_code == 400, bad
        assert "helpCenter.contactUrl" in str(await r.get_json()), bad
    url = "https://acme.example/contact?from=help"
    r = await org.patch("/settings", json={"helpCenter": {"contactUrl": url}})
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["data"]["helpCenter"]["contactUrl"] == url
    link = '<a href="https://acme.example/contact?from=help" rel="noopener">Contact us</a>'
    for path in paths:
        _, body, _ = await page(org, path)
        aside = between(body, '<aside class="contact"', "</aside>")
        assert "Still need help?" in aside and link in aside, path
    _, body, _ = await page(org, f"/en/questions/{q['slug']}")
    assert body.index('class="answer"') < body.index('<aside class="contact"')
    _, body, _ = await page(org, "/en/search?q=order")
    assert body.index("Where is my order?</a>") < body.index('<aside class="contact"')
    _, body, _ = await page(org, "/en")
    assert "Still need help?" not in body  # after results and answers only
    r = await org.patch("/settings", json={"helpCenter": {"contactUrl": None}})
    assert (await r.get_json())["data"]["helpCenter"]["contactUrl"] is None
    _, body, _ = await page(org, f"/en/questions/{q['slug']}")
    assert "Still need help?" not in body


async def test_every_url_form_the_docs_print_works(org: OrgClient) -> None:
    await set_locales(org, ["en", "fr"])
    await enable(org)
    for path, status, location in (
        ("", 302, f"/hc/{org.slug}/en"),
        ("/", 302, f"/hc/{org.slug}/en"),
        ("/fr/", 301, f"/hc/{org.slug}/fr"),
        ("/en/", 301, f"/hc/{org.slug}/en"),
    ):
        r = await org.client.get(f"/hc/{org.slug}{path}")
        assert r.status_code == status, path
        assert r.headers["Location"].endswith(location), (path, r.headers["Location"])
        followed = await org.client.get(location)
        assert followed.status_code == 200, path
    assert (await page(org, "/de/"))[0] == 404  # not enabled
    r = await org.client.get("/hc/no-such-org-anywhere/")
    assert r.status_code == 404 and "text/html" in r.headers["Content-Type"]
    r = await org.patch("/settings", json={"helpCenter": {"enabled": False}})
    for path in ("/", "/en/"):
        assert (await page(org, path))[0] == 404, path
