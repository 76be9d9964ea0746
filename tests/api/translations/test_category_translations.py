"""/categories/{idOrSlug}/translations[/{locale}]: list, get, PUT, DELETE, audit (issue 15)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.questions.helpers import error_code, events, fields
from tests.fixtures.orgs import OrgClient

FR = {"name": "Facturation", "description": "Paiements et factures"}


async def enable(org: OrgClient, *locales: str) -> None:
    r = await org.patch("/settings", json={"locales": ["en", *locales]})
    assert r.status_code == 200, await r.get_json()


async def category(org: OrgClient, **body: Any) -> dict[str, Any]:
    r = await org.post("/categories", json={"name": "Billing", **body}, scope="write")
    assert r.status_code == 201
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def put(org: OrgClient, ref: str, locale: str, body: Any, scope: str = "write") -> Any:
    return await org.request(
        "PUT", f"/categories/{ref}/translations/{locale}", json=body, scope=scope
    )


async def put_ok(org: OrgClient, ref: str, locale: str, body: Any, status: int) -> dict[str, Any]:
    r = await put(org, ref, locale, body)
    payload = await r.get_json()
    assert r.status_code == status, payload
    data: dict[str, Any] = payload["data"]
    return data


async def test_put_creates_then_replaces_and_reads_back(org: OrgClient) -> None:
    await enable(org, "fr", "de")
    c = await category(org, description="Payments and invoices")
    created = await put_ok(org, c["id"], "fr", FR, 201)
    assert set(created) == {"locale", "name", "description", "outdated", "createdAt", "updatedAt"}
    assert (created["locale"], created["name"], created["description"]) == (
        "fr",
        FR["name"],
        FR["description"],
    )
    assert created["outdated"] is False
    replaced = await put_ok(org, c["slug"], "fr", {"name": "Factures"}, 200)
    assert replaced["name"] == "Factures" and replaced["description"] is None
    assert replaced["createdAt"] == created["createdAt"]
    await put_ok(org, c["id"], "de", {"name": "Abrechnung"}, 201)
    r = await org.get(f"/categories/{c['slug']}/translations", scope="read")
    assert [t["locale"] for t in (await r.get_json())["data"]] == ["de", "fr"]
    r = await org.get(f"/categories/{c['id']}/translations/fr", scope="read")
    assert (await r.get_json())["data"] == replaced
    # The default category is translatable too.
    await put_ok(org, "uncategorized", "fr", {"name": "Sans catégorie"}, 201)


async def test_delete_missing_locale_rules_and_lengths(org: OrgClient) -> None:
    await enable(org, "fr")
    c = await category(org)
    r = await org.get(f"/categories/{c['id']}/translations/fr", scope="read")
    assert r.status_code == 404 and error_code(await r.get_json()) == "translation_not_found"
    await put_ok(org, c["id"], "fr", FR, 201)
    assert (
        await org.delete(f"/categories/{c['id']}/translations/fr", scope="write")
    ).status_code == 204
    r = await org.delete(f"/categories/{c['id']}/translations/fr", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "translation_not_found"
    for locale in ("es", "en", "xx"):
        r = await put(org, c["id"], locale, FR)
        body = await r.get_json()
        assert r.status_code == 400 and fields(body) == {"locale"}, (locale, body)
    for body, field in (
        ({"name": "x" * 201}, "name"),
        ({"name": ""}, "name"),
        ({"description": "d"}, "name"),
        ({"name": "n", "description": "x" * 5001}, "description"),
        ({"name": "n", "status": "draft"}, "status"),
    ):
        r = await put(org, c["id"], "fr", body)
        payload = await r.get_json()
        assert r.status_code == 400 and error_code(payload) == "validation_failed", payload
        assert field in fields(payload), (field, payload)
    await put_ok(org, c["id"], "fr", {"name": "x" * 200, "description": "y" * 5000}, 201)


async def test_other_orgs_ids_scopes(org: OrgClient, other_org: OrgClient) -> None:
    await enable(org, "fr")
    await enable(other_org, "fr")
    c = await category(org)
    await put_ok(org, c["id"], "fr", FR, 201)
    for ref in (c["id"], "cat_01JAAAAAAAAAAAAAAAAAAAAAAA", "no-such-category"):
        for r in (
            await other_org.get(f"/categories/{ref}/translations", scope="read"),
            await other_org.get(f"/categories/{ref}/translations/fr", scope="read"),
            await put(other_org, ref, "fr", FR),
            await other_org.delete(f"/categories/{ref}/translations/fr", scope="write"),
        ):
            assert r.status_code == 404, ref
            assert error_code(await r.get_json()) == "category_not_found"
    r = await put(org, c["id"], "fr", FR, scope="read")
    assert r.status_code == 403 and error_code(await r.get_json()) == "insufficient_scope"
    assert (await org.get(f"/categories/{c['id']}/translations", scope="read")).status_code == 200


async def test_writes_are_audited_and_emit_events(org: OrgClient, engine: AsyncEngine) -> None:
    await enable(org, "fr")
    c = await category(org)
    created = await put_ok(org, c["id"], "fr", FR, 201)
    replaced = await put_ok(org, c["id"], "fr", {"name": "Factures"}, 200)
    assert (
        await org.delete(f"/categories/{c['id']}/translations/fr", scope="write")
    ).status_code == 204
    r = await org.get("/categories/audit")
    entries = [e for e in (await r.get_json())["data"] if e["categoryId"] == c["id"]]
    actor = {"type": "apiKey", "id": org.fingerprints["write"]}
    assert [(e["action"], e["actor"], e["before"], e["after"]) for e in entries] == [
        ("translation_deleted", actor, replaced, None),
        ("translation_updated", actor, created, replaced),
        ("translation_updated", actor, None, created),
        ("created", actor, None, c),
    ]
    got = [(e, d) for e, d in await events(engine, org) if e.startswith("category.translation.")]
    assert got == [
        ("category.translation.updated", {"categoryId": c["id"], "translation": created}),
        ("category.translation.updated", {"categoryId": c["id"], "translation": replaced}),
        ("category.translation.deleted", {"categoryId": c["id"], "translation": replaced}),
    ]
