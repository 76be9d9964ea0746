"""Search in a locale (issue 15): ``q`` matches the text served in that locale, with that
language's stemming (French, German, …), still accent-insensitive, prefix-matching and ranked
title-first."""

from __future__ import annotations

from typing import Any

from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.questions.helpers import create, default_category
from tests.api.translations.test_reading import enable_locales, listed, translate
from tests.fixtures.orgs import OrgClient


async def found(org: OrgClient, q: str, path: str = "/questions", **query: Any) -> list[str]:
    """Titles (names) of the matches, best first."""
    _, body = await listed(org, path, query={"q": q, **query})
    return [item.get("title", item.get("name")) for item in body["data"]]


async def test_french_stems_and_folds_accents(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["fr", "en"], default="fr")
    category = await default_category(org)
    await create(org, category, title="Modifier mon abonnement", answer="Dans les réglages.")
    await create(org, category, title="Télécharger les reçus", answer="Depuis le tableau.")
    await create(org, category, title="Comment payer ?", answer="Par carte.")
    # Plural against singular: no prefix of the word matches, its stem does.
    assert await found(org, "abonnements", locale="fr") == ["Modifier mon abonnement"]
    assert await found(org, "téléchargement") == ["Télécharger les reçus"]  # the default: fr
    assert await found(org, "TELECHARGEMENTS recu") == ["Télécharger les reçus"]
    assert await found(org, "modif abon") == ["Modifier mon abonnement"]  # prefixes still
    assert await found(org, "comment") == ["Comment payer ?"]  # a French stopword still
    assert await found(org, "reglage") == ["Modifier mon abonnement"]


async def test_german_stems_translations_read_in_german(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "de"])
    category = await default_category(org)
    q = await create(org, category, title="How do I change my password?", answer="In settings.")
    await create(org, category, title="Where are my invoices?", answer="Under billing.")
    await translate(
        org,
        "questions",
        q["id"],
        "de",
        title="Wie ändere ich mein Passwort?",
        answer="In den Einstellungen.",
        status="published",
    )
    assert await found(org, "Passwörter", locale="de") == ["Wie ändere ich mein Passwort?"]
    assert await found(org, "passworter einstellung", locale="de") == [
        "Wie ändere ich mein Passwort?"
    ]
    # Served in German: the English title of a translated question no longer matches...
    assert await found(org, "change password", locale="de") == []
    # ...while an untranslated question is searched in its own text.
    assert await found(org, "invoices", locale="de") == ["Where are my invoices?"]
    # In English the own text, with English stems; "how" (an English stopword) still matches.
    assert await found(org, "passwords") == ["How do I change my password?"]
    assert await found(org, "how") == ["How do I change my password?"]
    assert await found(org, "changes", locale="en") == ["How do I change my password?"]


async def test_a_draft_translation_is_not_searched(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    category = await default_category(org)
    q = await create(org, category, title="Refunds", answer="Ask us.")
    await translate(org, "questions", q["id"], "fr", title="Remboursements", answer="Demandez.")
    assert await found(org, "remboursement", locale="fr") == []
    assert await found(org, "refund", locale="fr") == ["Refunds"]


async def test_title_ranks_first_in_a_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    category = await default_category(org)
    made = [
        await create(org, category, title=f"Question {i}", answer=f"Answer {i}") for i in range(3)
    ]
    texts = [
        ("Les paiements", "Rien."),  # no
        ("Autre sujet", "Comment gérer les abonnements."),  # the answer
        ("Gérer mon abonnement", "Ici."),  # the title
    ]
    for question, (title, answer) in zip(made, texts, strict=True):
        await translate(
            org,
            "questions",
            question["id"],
            "fr",
            title=title,
            answer=answer,
            status="published",
        )
    assert await found(org, "abonnement", locale="fr") == ["Gérer mon abonnement", "Autre sujet"]
    # Walking the pages of a search in a locale: every match once.
    _, body = await listed(
        org, "/questions", query={"q": "abonnements", "locale": "fr", "limit": 1}
    )
    cursor = body["meta"]["pagination"]["cursor"]
    assert cursor is not None and body["data"][0]["title"] == "Gérer mon abonnement"
    _, rest = await listed(
        org, "/questions", query={"q": "abonnements", "locale": "fr", "limit": 1, "cursor": cursor}
    )
    assert [q["title"] for q in rest["data"]] == ["Autre sujet"]
    assert rest["meta"]["pagination"]["cursor"] is None
    # A cursor of one locale's search is not a cursor of another's.
    r = await org.get(
        "/questions", query={"q": "abonnements", "locale": "en", "cursor": cursor}, scope="read"
    )
    assert r.status_code == 400


async def test_one_letter_search_in_a_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    category = await default_category(org)
    a = await create(org, category, title="Apples", answer="Red.", order=1)
    await create(org, category, title="Bananas", answer="Yellow.", order=2)
    await translate(
        org, "questions", a["id"], "fr", title="Pommes", answer="Rouges.", status="published"
    )
    assert await found(org, "p", locale="fr") == ["Pommes"]
    assert await found(org, "a", locale="fr") == []
    assert await found(org, "a") == ["Apples"]


async def test_categories_search_in_a_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "de"])
    r = await org.post("/categories", json={"name": "Invoices", "description": "Money"})
    category = (await r.get_json())["data"]
    await org.post("/categories", json={"name": "Accounts"})
    await translate(
        org, "categories", category["id"], "de", name="Rechnung", description="Geld und Zahlungen"
    )
    assert await found(org, "Rechnungen", "/categories", locale="de") == ["Rechnung"]
    assert await found(org, "zahlung", "/categories", locale="de") == ["Rechnung"]
    assert await found(org, "accounts", "/categories", locale="de") == ["Accounts"]
    assert await found(org, "invoice", "/categories", locale="de") == []
    assert await found(org, "invoice", "/categories") == ["Invoices"]
