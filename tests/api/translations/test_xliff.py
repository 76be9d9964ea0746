"""Translation files (issue 15): XLIFF 1.2 export and import, from outside.

Files are read and filled with translate-toolkit, as a translator's tool would.
"""

from __future__ import annotations

from typing import Any

from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine
from translate.storage import xliff

from tests.fixtures.orgs import OrgClient

XLIFF = "application/xliff+xml"
parse_xliff: Any = xliff.xlifffile.parsestring  # translate-toolkit is untyped


async def enable_locales(app: Quart, engine: AsyncEngine, org: OrgClient, *locales: str) -> None:
    """The org serves these locales besides `en` (PATCH /settings)."""
    r = await org.patch(
        "/settings", json={"locales": ["en", *locales], "defaultLocale": "en"}, scope="admin"
    )
    assert r.status_code == 200, await r.get_json()


async def default_category(org: OrgClient) -> dict[str, Any]:
    r = await org.get("/categories")
    category: dict[str, Any] = next(c for c in (await r.get_json())["data"] if c["isDefault"])
    return category


async def translation_of(
    org: OrgClient, engine: AsyncEngine, kind: str, resource_id: str, locale: str
) -> dict[str, Any] | None:
    """GET …/questions|categories/{id}/translations/{locale} (None on 404
    translation_not_found)."""
    plural = {"question": "questions", "category": "categories"}[kind]
    r = await org.get(f"/{plural}/{resource_id}/translations/{locale}")
    if r.status_code == 200:
        data: dict[str, Any] = (await r.get_json())["data"]
        return data
    assert r.status_code == 404
    assert (await r.get_json())["error"]["code"] == "translation_not_found"
    return None


async def make_question(org: OrgClient, title: str, answer: str) -> dict[str, Any]:
    category = await default_category(org)
    r = await org.post(
        "/questions",
        json={"title": title, "answer": answer, "categoryId": category["id"], "status": "draft"},
    )
    assert r.status_code == 201, await r.get_data()
    body: dict[str, Any] = (await r.get_json())["data"]
    return body


async def export(org: OrgClient, locale: str | None, scope: str = "read") -> Any:
    query = {"locale": locale} if locale is not None else None
    return await org.get("/translations/export", query=query, scope=scope)


async def export_store(org: OrgClient, locale: str) -> Any:
    r = await export(org, locale)
    assert r.status_code == 200, await r.get_data()
    assert r.headers["Content-Type"].startswith(XLIFF)
    return parse_xliff(await r.get_data())


def units_by_id(store: Any) -> dict[str, Any]:
    return {unit.getid().rpartition("\x04")[2]: unit for unit in store.units}


async def import_file(
    org: OrgClient, body: bytes, scope: str = "write", content_type: str = XLIFF
) -> Any:
    return await org.post(
        "/translations/import", data=body, scope=scope, headers={"Content-Type": content_type}
    )


def xliff_file(target_language: str, units: dict[str, str], source_language: str = "en") -> bytes:
    """A translator's file, made with translate-toolkit."""
    store: Any = xliff.xlifffile()
    store.setsourcelanguage(source_language)
    store.settargetlanguage(target_language)
    for unit_id, target in units.items():
        unit = store.addsourceunit("source")
        unit.setid(unit_id)
        unit.settarget(target, lang=target_language)
    return bytes(store)


# ---- export --------------------------------------------------------------------------------


async def test_export_needs_an_enabled_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    for locale in (None, "de", "xx-YY"):
        r = await export(org, locale)
        assert r.status_code == 400
        error = (await r.get_json())["error"]
        assert error["code"] == "validation_failed"
        assert error["details"][0]["field"] == "locale"
    assert (await export(org, "fr")).status_code == 200
    assert (await export(org, "FR")).status_code == 200  # canonical case


async def test_export_has_one_unit_per_field_in_the_sources_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    question = await make_question(org, "How do I reset <my> password?", "Click & wait.\n  Done.")
    r = await org.post("/categories", json={"name": "Billing", "description": "Money matters"})
    category = (await r.get_json())["data"]
    default = await default_category(org)

    store = await export_store(org, "fr")
    units = units_by_id(store)
    assert set(units) == {
        f"question/{question['id']}/title",
        f"question/{question['id']}/answer",
        f"category/{category['id']}/name",
        f"category/{category['id']}/description",
        f"category/{default['id']}/name",  # no description: no unit
    }
    assert units[f"question/{question['id']}/title"].source == "How do I reset <my> password?"
    assert units[f"question/{question['id']}/answer"].source == "Click & wait.\n  Done."
    assert all(unit.target is None for unit in units.values())
    root = store.document.getroot()
    assert root.get("version") == "1.2"
    files = list(root.iterchildren("{urn:oasis:names:tc:xliff:document:1.2}file"))
    assert [(f.get("source-language"), f.get("target-language")) for f in files] == [("en", "fr")]


async def test_export_scope_and_other_org(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    await enable_locales(app, engine, other_org, "fr")
    theirs = await make_question(other_org, "Their question", "Their answer")
    assert (
        await org.get("/translations/export", query={"locale": "fr"}, scope=None)
    ).status_code == 401
    store = await export_store(org, "fr")
    assert not any(theirs["id"] in unit_id for unit_id in units_by_id(store))


# ---- import and the round trip -------------------------------------------------------------


async def test_round_trip_export_translate_import_export(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    question = await make_question(org, "Reset password", "Use the link.")
    default = await default_category(org)

    # A translator fills every target of the exported file.
    store = await export_store(org, "fr")
    french = {
        "title": "Réinitialiser le mot de passe",
        "answer": "Utilisez le lien.",
        "name": "Divers",
    }
    for unit in store.units:
        unit.settarget(french[unit.getid().rpartition("/")[2]], lang="fr")
    r = await import_file(org, bytes(store))
    assert r.status_code == 200, await r.get_data()
    assert (await r.get_json())["data"] == {"updated": 2, "unchanged": 0, "errors": []}

    translation = await translation_of(org, engine, "question", question["id"], "fr")
    assert translation is not None
    assert translation["title"] == french["title"]
    assert translation["answer"] == french["answer"]
    assert translation["status"] == "draft"
    category = await translation_of(org, engine, "category", default["id"], "fr")
    assert category is not None and category["name"] == "Divers"

    units = units_by_id(await export_store(org, "fr"))
    title = units[f"question/{question['id']}/title"]
    assert title.target == french["title"]
    assert title.getlanguageNode(lang=None, index=1).get("state") == "translated"
    assert units[f"category/{default['id']}/name"].target == "Divers"

    # The same file again: nothing changes.
    r = await import_file(org, bytes(store))
    assert (await r.get_json())["data"] == {"updated": 0, "unchanged": 2, "errors": []}

    # The source changes: the translation is outdated in the next export.
    await org.patch(f"/questions/{question['id']}", json={"answer": "Use the new link."})
    units = units_by_id(await export_store(org, "fr"))
    state = units[f"question/{question['id']}/answer"].getlanguageNode(lang=None, index=1)
    assert state.get("state") == "needs-review-translation"


async def test_import_needs_write_scope(app: Quart, engine: AsyncEngine, org: OrgClient) -> None:
    await enable_locales(app, engine, org, "fr")
    question = await make_question(org, "Q", "A")
    body = xliff_file(
        "fr", {f"question/{question['id']}/title": "T", f"question/{question['id']}/answer": "R"}
    )
    r = await import_file(org, body, scope="read")
    assert r.status_code == 403
    assert (await r.get_json())["error"]["code"] == "insufficient_scope"
    r = await import_file(org, body, scope="write")
    assert (await r.get_json())["data"]["updated"] == 1


async def test_import_reports_bad_units_and_writes_the_good_resources(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    await enable_locales(app, engine, other_org, "fr")
    good = await make_question(org, "Good", "Fine")
    long = await make_question(org, "Long", "Too long")
    half = await make_question(org, "Half", "Only a title")
    theirs = await make_question(other_org, "Theirs", "Not yours")
    body = xliff_file(
        "fr",
        {
            f"question/{good['id']}/title": "Bon",
            f"question/{good['id']}/answer": "Bien",
            f"question/{long['id']}/title": "x" * 501,
            f"question/{long['id']}/answer": "Trop long",
            f"question/{half['id']}/title": "Moitié",
            f"question/{theirs['id']}/title": "Le leur",
            f"question/{theirs['id']}/answer": "Pas le vôtre",
            "question/q_01ARZ3NDEKTSV4RRFFQ69G5FAV/title": "Inconnu",
            "something/else": "Quoi",
        },
    )
    r = await import_file(org, body)
    assert r.status_code == 200
    data = (await r.get_json())["data"]
    assert data["updated"] == 1 and data["unchanged"] == 0
    codes = {(e["unit"], e["code"]) for e in data["errors"]}
    assert (f"question/{long['id']}/title", "too_long") in codes
    assert (f"question/{half['id']}/title", "incomplete") in codes
    assert (f"question/{theirs['id']}/title", "not_found") in codes
    assert ("question/q_01ARZ3NDEKTSV4RRFFQ69G5FAV/title", "not_found") in codes
    assert ("something/else", "unknown_unit") in codes
    assert all(e["issue"] for e in data["errors"])

    assert await translation_of(org, engine, "question", good["id"], "fr") is not None
    for bad in (long, half):  # no partial write of a bad resource
        assert await translation_of(org, engine, "question", bad["id"], "fr") is None
    assert await translation_of(other_org, engine, "question", theirs["id"], "fr") is None

    # A title alone completes an existing translation.
    body = xliff_file("fr", {f"question/{good['id']}/title": "Très bon"})
    assert (await (await import_file(org, body)).get_json())["data"]["updated"] == 1
    completed = await translation_of(org, engine, "question", good["id"], "fr")
    assert completed is not None
    assert (completed["title"], completed["answer"]) == ("Très bon", "Bien")


async def test_import_refuses_a_disabled_or_source_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    question = await make_question(org, "Q", "A")
    units = {f"question/{question['id']}/title": "T", f"question/{question['id']}/answer": "R"}
    for language, code in (("de", "locale_not_enabled"), ("en", "locale_is_source")):
        r = await import_file(org, xliff_file(language, units))
        data = (await r.get_json())["data"]
        assert data["updated"] == 0
        assert {e["code"] for e in data["errors"]} == {code}
        assert len(data["errors"]) == 2


async def test_import_refuses_what_is_not_xliff(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    for body in (b"", b"not xml", b'{"a": 1}', b"<html/>"):
        r = await import_file(org, body)
        assert r.status_code == 400, body
        error = (await r.get_json())["error"]
        assert error["code"] == "validation_failed"
        assert error["details"][0]["field"] == "body"
    r = await import_file(org, xliff_file("fr", {}), content_type="application/json")
    assert r.status_code == 415
    assert (await r.get_json())["error"]["code"] == "unsupported_media_type"
    for content_type in ("application/x-xliff+xml", "text/xml", "application/xml"):
        r = await import_file(org, xliff_file("fr", {}), content_type=content_type)
        assert r.status_code == 200


async def test_openapi_documents_the_file_routes(client: Any) -> None:
    paths = (await (await client.get("/openapi.json")).get_json())["paths"]
    assert "get" in paths["/api/v1/{org}/translations/export"]
    assert "post" in paths["/api/v1/{org}/translations/import"]
