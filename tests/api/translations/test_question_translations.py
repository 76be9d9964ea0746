"""/questions/{idOrSlug}/translations[/{locale}]: list, get, PUT, DELETE (issue 15)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.questions.helpers import create, error_code, events, fields
from tests.fixtures.orgs import OrgClient

FR = {"title": "Comment réinitialiser mon mot de passe ?", "answer": "Utilisez le lien."}
DE = {"title": "Wie setze ich mein Passwort zurück?", "answer": "Nutzen Sie den Link."}


async def enable(org: OrgClient, *locales: str) -> None:
    r = await org.patch("/settings", json={"locales": ["en", *locales]})
    assert r.status_code == 200, await r.get_json()


async def put(org: OrgClient, ref: str, locale: str, body: Any, scope: str = "write") -> Any:
    return await org.request(
        "PUT", f"/questions/{ref}/translations/{locale}", json=body, scope=scope
    )


async def put_ok(org: OrgClient, ref: str, locale: str, body: Any, status: int) -> dict[str, Any]:
    r = await put(org, ref, locale, body)
    payload = await r.get_json()
    assert r.status_code == status, payload
    data: dict[str, Any] = payload["data"]
    return data


async def test_put_creates_then_replaces_and_reads_back(org: OrgClient) -> None:
    await enable(org, "fr", "de")
    q = await create(org)
    created = await put_ok(org, q["id"], "fr", FR, 201)
    assert set(created) == {
        "locale",
        "title",
        "answer",
        "status",
        "outdated",
        "createdAt",
        "updatedAt",
    }
    assert created["locale"] == "fr" and created["title"] == FR["title"]
    assert created["answer"] == FR["answer"]
    assert created["status"] == "draft" and created["outdated"] is False
    assert created["createdAt"] == created["updatedAt"]

    published = await put_ok(
        org, q["id"], "fr", {**FR, "title": "Mot de passe", "status": "published"}, 200
    )
    assert published["title"] == "Mot de passe" and published["status"] == "published"
    assert published["createdAt"] == created["createdAt"]
    assert published["updatedAt"] >= created["updatedAt"]
    # Without status, a replace keeps the status it had.
    kept = await put_ok(org, q["id"], "fr", FR, 200)
    assert kept["status"] == "published"
    # By slug, and the locale in any case.
    de = await put_ok(org, q["slug"], "DE", {**DE, "status": "draft"}, 201)
    assert de["locale"] == "de"

    r = await org.get(f"/questions/{q['slug']}/translations", scope="read")
    assert r.status_code == 200
    listed = (await r.get_json())["data"]
    assert [t["locale"] for t in listed] == ["de", "fr"]
    assert listed[1] == kept
    r = await org.get(f"/questions/{q['id']}/translations/fr", scope="read")
    assert (await r.get_json())["data"] == kept
    # The question itself is untouched.
    r = await org.get(f"/questions/{q['id']}", scope="read")
    assert (await r.get_json())["data"]["title"] == q["title"]


async def test_delete_then_missing_is_translation_not_found(org: OrgClient) -> None:
    await enable(org, "fr")
    q = await create(org)
    r = await org.get(f"/questions/{q['id']}/translations/fr", scope="read")
    assert r.status_code == 404 and error_code(await r.get_json()) == "translation_not_found"
    r = await org.delete(f"/questions/{q['id']}/translations/fr", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "translation_not_found"
    await put_ok(org, q["id"], "fr", FR, 201)
    r = await org.delete(f"/questions/{q['id']}/translations/fr", scope="write")
    assert r.status_code == 204
    r = await org.get(f"/questions/{q['id']}/translations/fr", scope="read")
    assert r.status_code == 404 and error_code(await r.get_json()) == "translation_not_found"
    r = await org.get(f"/questions/{q['id']}/translations", scope="read")
    assert (await r.get_json())["data"] == []
    # Created again after a delete: 201.
    await put_ok(org, q["id"], "fr", FR, 201)


async def test_disabled_own_or_unknown_locale_is_validation_failed(org: OrgClient) -> None:
    await enable(org, "fr")
    q = await create(org)
    for locale in ("es", "en", "EN", "xx", "fr_FR", "not-a-locale"):
        for r in (
            await put(org, q["id"], locale, FR),
            await org.get(f"/questions/{q['id']}/translations/{locale}", scope="read"),
            await org.delete(f"/questions/{q['id']}/translations/{locale}", scope="write"),
        ):
            body = await r.get_json()
            assert r.status_code == 400, (locale, body)
            assert error_code(body) == "validation_failed"
            assert fields(body) == {"locale"}


async def test_length_rules_are_the_questions(org: OrgClient) -> None:
    await enable(org, "fr")
    q = await create(org)
    cases = [
        ({**FR, "title": "x" * 501}, "title"),
        ({**FR, "title": ""}, "title"),
        ({**FR, "answer": "x" * 100_001}, "answer"),
        ({**FR, "answer": ""}, "answer"),
        ({"title": FR["title"]}, "answer"),
        ({**FR, "status": "archived"}, "status"),
        ({**FR, "title": 5}, "title"),
        ({**FR, "locale": "fr"}, "locale"),
    ]
    for body, field in cases:
        r = await put(org, q["id"], "fr", body)
        payload = await r.get_json()
        assert r.status_code == 400, (field, payload)
        assert error_code(payload) == "validation_failed"
        assert field in fields(payload), (field, payload)
    # The longest allowed values are taken.
    await put_ok(org, q["id"], "fr", {"title": "x" * 500, "answer": "y" * 100_000}, 201)


async def test_other_orgs_ids_and_missing_questions_are_question_not_found(
    org: OrgClient, other_org: OrgClient
) -> None:
    await enable(org, "fr")
    await enable(other_org, "fr")
    q = await create(org)
    await put_ok(org, q["id"], "fr", FR, 201)
    for ref in (q["id"], q["slug"], "q_01JAAAAAAAAAAAAAAAAAAAAAAA", "no-such-question"):
        for r in (
            await other_org.get(f"/questions/{ref}/translations", scope="read"),
            await other_org.get(f"/questions/{ref}/translations/fr", scope="read"),
            await put(other_org, ref, "fr", FR),
            await other_org.delete(f"/questions/{ref}/translations/fr", scope="write"),
        ):
            assert r.status_code == 404, ref
            assert error_code(await r.get_json()) == "question_not_found"
    # A deleted question's translations are gone with it.
    assert (await org.delete(f"/questions/{q['id']}", scope="write")).status_code == 204
    r = await org.get(f"/questions/{q['id']}/translations", scope="read")
    assert r.status_code == 404 and error_code(await r.get_json()) == "question_not_found"


async def test_scopes(org: OrgClient) -> None:
    await enable(org, "fr")
    q = await create(org)
    r = await put(org, q["id"], "fr", FR, scope="read")
    assert r.status_code == 403 and error_code(await r.get_json()) == "insufficient_scope"
    await put_ok(org, q["id"], "fr", FR, 201)
    r = await org.delete(f"/questions/{q['id']}/translations/fr", scope="read")
    assert r.status_code == 403
    assert (await org.get(f"/questions/{q['id']}/translations", scope=None)).status_code == 401
    assert (await org.get(f"/questions/{q['id']}/translations/fr", scope="read")).status_code == 200


async def test_events_carry_the_question_id_and_the_translation(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await enable(org, "fr")
    q = await create(org)
    created = await put_ok(org, q["id"], "fr", FR, 201)
    replaced = await put_ok(org, q["id"], "fr", {**FR, "status": "published"}, 200)
    assert (
        await org.delete(f"/questions/{q['id']}/translations/fr", scope="write")
    ).status_code == 204
    # Refused writes record nothing.
    await put(org, q["id"], "es", FR)
    got = [(e, d) for e, d in await events(engine, org) if e.startswith("question.translation.")]
    assert got == [
        ("question.translation.updated", {"questionId": q["id"], "translation": created}),
        ("question.translation.updated", {"questionId": q["id"], "translation": replaced}),
        ("question.translation.deleted", {"questionId": q["id"], "translation": replaced}),
    ]


async def test_webhooks_subscribe_to_the_translation_events(org: OrgClient) -> None:
    events_ = [
        "question.translation.updated",
        "question.translation.deleted",
        "category.translation.updated",
        "category.translation.deleted",
    ]
    r = await org.post("/webhooks", json={"url": "https://example.com/hook", "events": events_})
    assert r.status_code == 201, await r.get_json()
    assert (await r.get_json())["data"]["events"] == events_


async def test_openapi_documents_the_translation_and_settings_routes(client: Any) -> None:
    spec = await (await client.get("/openapi.json")).get_json()
    paths = spec["paths"]
    for kind, fields_ in (
        ("questions", {"title", "answer", "status"}),
        ("categories", {"name", "description"}),
    ):
        collection = f"/api/v1/{{org}}/{kind}/{{ref}}/translations"
        item = f"{collection}/{{locale}}"
        assert set(paths[collection]) == {"get"}
        assert set(paths[item]) == {"get", "put", "delete"}
        assert {"200", "201", "400", "404"} <= set(paths[item]["put"]["responses"])
        body = paths[item]["put"]["requestBody"]["content"]["application/json"]["schema"]
        if "$ref" in body:
            body = spec["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
        assert set(body["properties"]) == fields_
    assert set(paths["/api/v1/{org}/settings"]) == {"get", "patch"}
