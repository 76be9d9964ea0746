"""Reading in a language (issue 15): every GET of questions and categories serves, per
resource, its published translation in the negotiated locale (``?locale=`` or
``Accept-Language``), else its own fields, and says which language it served."""

from __future__ import annotations

from typing import Any

from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.questions.helpers import create, default_category, error_code, fields
from tests.fixtures.orgs import OrgClient

# ---- helpers (the other translation-reading tests use them too) ----------------------------


async def enable_locales(
    app: Quart, engine: AsyncEngine, org: OrgClient, locales: list[str], default: str = "en"
) -> None:
    """The org serves ``locales`` (PATCH /settings, admin)."""
    r = await org.patch("/settings", json={"locales": locales, "defaultLocale": default})
    assert r.status_code == 200, await r.get_json()


async def translate(
    org: OrgClient, kind: str, ref: str, locale: str, **body: Any
) -> dict[str, Any]:
    """PUT a translation of a question or category (``kind``: questions, categories)."""
    r = await org.request("PUT", f"/{kind}/{ref}/translations/{locale}", json=body, scope="write")
    assert r.status_code in (200, 201), await r.get_json()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def translated_org(app: Quart, engine: AsyncEngine, org: OrgClient) -> dict[str, Any]:
    """en (default), fr, de enabled; q1 published in fr, q2 a draft in fr, q3 untranslated;
    a category translated to fr."""
    await enable_locales(app, engine, org, ["en", "fr", "de"])
    r = await org.post("/categories", json={"name": "Billing", "description": "Money"})
    category = (await r.get_json())["data"]
    await translate(org, "categories", category["id"], "fr", name="Facturation", description=None)
    q1 = await create(org, category["id"], title="How do I pay?", answer="With a card.", order=1)
    q2 = await create(org, category["id"], title="Refunds", answer="Ask us.", order=2)
    q3 = await create(org, category["id"], title="Invoices", answer="Monthly.", order=3)
    await translate(
        org,
        "questions",
        q1["id"],
        "fr",
        title="Comment payer ?",
        answer="Par carte.",
        status="published",
    )
    await translate(org, "questions", q2["id"], "fr", title="Remboursements", answer="Demandez.")
    return {"category": category, "q1": q1, "q2": q2, "q3": q3}


async def listed(org: OrgClient, path: str, **kw: Any) -> tuple[Any, dict[str, Any]]:
    r = await org.get(path, scope="read", **kw)
    assert r.status_code == 200, await r.get_json()
    return r, await r.get_json()


# ---- tests -----------------------------------------------------------------------------------


async def test_a_list_serves_published_translations_else_own_fields(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    made = await translated_org(app, engine, org)
    _, body = await listed(org, "/questions", query={"locale": "fr"})
    served = {q["id"]: (q["locale"], q["title"], q["answer"]) for q in body["data"]}
    assert served == {
        made["q1"]["id"]: ("fr", "Comment payer ?", "Par carte."),
        made["q2"]["id"]: ("en", "Refunds", "Ask us."),  # a draft is not served
        made["q3"]["id"]: ("en", "Invoices", "Monthly."),
    }
    assert [q["id"] for q in body["data"]] == [made[k]["id"] for k in ("q1", "q2", "q3")]
    _, body = await listed(org, "/questions")  # the default: own fields
    assert {q["locale"] for q in body["data"]} == {"en"}
    assert "How do I pay?" in {q["title"] for q in body["data"]}
    _, body = await listed(org, "/questions", query={"locale": "de"})  # nothing in de
    assert {q["title"] for q in body["data"]} == {"How do I pay?", "Refunds", "Invoices"}


async def test_single_reads_and_categories_in_a_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    made = await translated_org(app, engine, org)
    for ref in (made["q1"]["id"], made["q1"]["slug"]):
        r, body = await listed(org, f"/questions/{ref}", query={"locale": "fr"})
        assert (body["data"]["locale"], body["data"]["title"]) == ("fr", "Comment payer ?")
        assert r.headers["Content-Language"] == "fr"
        assert "Accept-Language" not in r.headers.get("Vary", "")
    r, body = await listed(org, f"/questions/{made['q2']['id']}", query={"locale": "fr"})
    assert body["data"]["title"] == "Refunds" and r.headers["Content-Language"] == "en"
    category = made["category"]
    r, body = await listed(org, f"/categories/{category['slug']}", query={"locale": "fr"})
    data = body["data"]
    assert (data["locale"], data["name"], data["description"]) == ("fr", "Facturation", None)
    assert data["questionCount"] == 3 and r.headers["Content-Language"] == "fr"
    _, body = await listed(org, "/categories", query={"locale": "fr"})
    names = {c["id"]: (c["locale"], c["name"]) for c in body["data"]}
    assert names[category["id"]] == ("fr", "Facturation")
    assert ("en", "Uncategorized") in names.values()
    r, body = await listed(org, f"/categories/{category['id']}")
    assert (body["data"]["name"], r.headers["Content-Language"]) == ("Billing", "en")


async def test_accept_language_chooses_with_quality_and_region_fallback_and_varies(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    made = await translated_org(app, engine, org)
    path = f"/questions/{made['q1']['id']}"
    for header, locale in [
        ("fr-CH", "fr"),
        ("de;q=0.4, fr;q=0.9", "fr"),
        ("es, fr;q=0", "en"),
        ("*", "en"),
    ]:
        r, body = await listed(org, path, headers={"Accept-Language": header})
        assert body["data"]["locale"] == locale, header
        assert r.headers["Content-Language"] == locale
        assert "Accept-Language" in r.headers["Vary"]
    r, body = await listed(org, "/questions", headers={"Accept-Language": "fr-CA, en;q=0.5"})
    assert "Comment payer ?" in {q["title"] for q in body["data"]}
    assert "Accept-Language" in r.headers["Vary"]
    assert "Content-Language" not in r.headers  # a list mixes languages
    # ?locale= wins over the header, and then the response does not vary on it.
    r, body = await listed(org, path, query={"locale": "en"}, headers={"Accept-Language": "fr"})
    assert body["data"]["title"] == "How do I pay?"
    assert "Accept-Language" not in r.headers.get("Vary", "")


async def test_a_locale_not_enabled_is_refused(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    made = await translated_org(app, engine, org)
    for path in ("/questions", f"/questions/{made['q1']['id']}", "/categories"):
        for locale in ("es", "xx", "fr_FR", "fr-CH"):
            r = await org.get(path, query={"locale": locale}, scope="read")
            assert r.status_code == 400, (path, locale)
            body = await r.get_json()
            assert error_code(body) == "validation_failed" and fields(body) == {"locale"}
    r, body = await listed(org, "/questions", query={"locale": "FR"})  # canonicalised
    assert "Comment payer ?" in {q["title"] for q in body["data"]}


async def test_cached_bodies_are_per_locale_and_follow_translation_writes(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    made = await translated_org(app, engine, org)
    path = f"/questions/{made['q3']['id']}"
    for _ in range(2):  # the second read of each comes from the cache
        for header, title, locale in [
            ("fr", "Invoices", "en"),
            ("de", "Invoices", "en"),
            ("en", "Invoices", "en"),
        ]:
            r, body = await listed(org, path, headers={"Accept-Language": header})
            assert (body["data"]["title"], r.headers["Content-Language"]) == (title, locale)
    await translate(
        org,
        "questions",
        made["q3"]["id"],
        "fr",
        title="Factures",
        answer="Mensuelles.",
        status="published",
    )
    for _ in range(2):
        r, body = await listed(org, path, headers={"Accept-Language": "fr"})
        assert (body["data"]["title"], r.headers["Content-Language"]) == ("Factures", "fr")
        assert "Accept-Language" in r.headers["Vary"]
        r, body = await listed(org, path, headers={"Accept-Language": "de"})
        assert (body["data"]["title"], r.headers["Content-Language"]) == ("Invoices", "en")
        _, body = await listed(org, "/questions", query={"locale": "fr"})
        assert "Factures" in {q["title"] for q in body["data"]}
        _, body = await listed(org, "/questions")
        assert "Factures" not in {q["title"] for q in body["data"]}


async def test_another_orgs_translations_are_never_served(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await translated_org(app, engine, org)
    await enable_locales(app, engine, other_org, ["en", "fr"])
    category = await default_category(other_org)
    await create(other_org, category, title="Theirs", answer="Only.")
    _, body = await listed(other_org, "/questions", query={"locale": "fr"})
    assert [(q["locale"], q["title"]) for q in body["data"]] == [("en", "Theirs")]
