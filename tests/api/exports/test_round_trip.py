"""Export org A, import the bundle into a fresh org B: every category, question, translation
and setting equal but for ids and timestamps (field by field)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from api.exports.build import run_export
from tests.api.imports.helpers import all_categories, all_questions, run
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, await response.get_data()
    return (await response.get_json())["data"]


async def seed(org: OrgClient) -> None:
    await _ok(
        await org.patch(
            "/settings",
            json={"locales": ["en", "fr"], "helpCenter": {"enabled": True, "title": "Acme Help"}},
        )
    )
    uncategorized = (await all_categories(org))[0]
    await _ok(await org.patch(f"/categories/{uncategorized['id']}", json={"name": "General"}))
    billing = await _ok(
        await org.post("/categories", json={"name": "Billing", "description": "Money", "order": 1}),
        201,
    )
    refunds = await _ok(
        await org.post(
            "/categories",
            json={"name": "Refunds", "slug": "money-back", "parentId": billing["id"], "order": 2},
        ),
        201,
    )
    account = await _ok(await org.post("/categories", json={"name": "Account"}), 201)
    questions = [
        {
            "title": "How do I pay?",
            "answer": "With a **card**.",
            "categoryId": billing["id"],
            "status": "published",
            "slug": "pay",
            "order": 3,
        },
        {
            "title": "Refund policy",
            "answer": "30 days.\n\n| a | b |\n|---|---|\n| 1 | 2 |",
            "categoryId": refunds["id"],
            "status": "draft",
        },
        {
            "title": "Old plans",
            "answer": "Gone.",
            "categoryId": account["id"],
            "status": "archived",
        },
        {
            "title": "New plans",
            "answer": "Soon.",
            "categoryId": account["id"],
            "status": "scheduled",
            "scheduledPublishAt": "2031-01-01T09:00:00.000Z",
        },
        {
            "title": "Hello",
            "answer": "Hi.",
            "categoryId": uncategorized["id"],
            "status": "published",
        },
    ]
    created = [await _ok(await org.post("/questions", json=q), 201) for q in questions]
    await _ok(await org.patch(f"/questions/{created[0]['id']}", json={"answer": "With a card."}))
    await _ok(
        await org.request(
            "PUT",
            f"/questions/{created[0]['id']}/translations/fr",
            json={"title": "Comment payer ?", "answer": "Par carte.", "status": "published"},
        ),
        201,
    )
    await _ok(
        await org.request(
            "PUT",
            f"/categories/{billing['id']}/translations/fr",
            json={"name": "Facturation", "description": "Argent"},
        ),
        201,
    )


async def snapshot(org: OrgClient) -> dict[str, Any]:
    """Everything but ids and timestamps, keyed by slug."""
    categories = await all_categories(org)
    slug_of = {c["id"]: c["slug"] for c in categories}
    out: dict[str, Any] = {"settings": await _ok(await org.get("/settings"))}
    out["categories"] = {
        c["slug"]: {
            "name": c["name"],
            "description": c["description"],
            "order": c["order"],
            "isDefault": c["isDefault"],
            "parent": slug_of.get(c["parentId"]),
            "questionCount": c["questionCount"],
            "translations": [
                {k: t[k] for k in ("locale", "name", "description")}
                for t in await _ok(await org.get(f"/categories/{c['id']}/translations"))
            ],
        }
        for c in categories
    }
    questions = await all_questions(org)
    out["questions"] = {
        q["slug"]: {
            "title": q["title"],
            "answer": q["answer"],
            "status": q["status"],
            "order": q["order"],
            "category": slug_of[q["categoryId"]],
            "scheduledPublishAt": q["scheduledPublishAt"],
            "published": q["publishedAt"] is not None,
            "translations": [
                {k: t[k] for k in ("locale", "title", "answer", "status", "outdated")}
                for t in await _ok(await org.get(f"/questions/{q['id']}/translations"))
            ],
        }
        for q in questions
    }
    return out


async def export_bundle(engine: AsyncEngine, org: OrgClient, **query: Any) -> bytes:
    job = await _ok(await org.post("/exports", query=query), 202)
    assert job["status"] == "queued" and job["downloadUrl"] is None
    await run_export(engine, org.info.id, job["id"])
    job = await _ok(await org.get(f"/exports/{job['id']}"))
    assert job["status"] == "succeeded", job
    assert job["downloadUrl"] == f"/api/v1/{org.slug}/exports/{job['id']}/download"
    r = await org.get(f"/exports/{job['id']}/download")
    assert r.status_code == 200 and r.mimetype == "application/zip"
    body: bytes = await r.get_data()
    assert len(body) == job["sizeBytes"]
    return body


async def test_round_trip_copies_an_org(org_factory: OrgFactory, engine: AsyncEngine) -> None:
    a = await org_factory()
    await seed(a)
    bundle = await export_bundle(engine, a, revisions="true")
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        manifest = orjson.loads(archive.read("manifest.json"))
        assert manifest["format"] == "faq-export" and manifest["version"] == 1
        assert manifest["counts"]["questions"] == 5 and manifest["counts"]["categories"] == 4
        lines = archive.read("questions.ndjson").splitlines()
        pay = next(orjson.loads(x) for x in lines if orjson.loads(x)["slug"] == "pay")
        assert [r["changedFields"] for r in pay["revisions"]] == [["answer"]]
        assert "secret" not in archive.read("webhooks.ndjson").decode()
        documented = {
            name: orjson.loads(archive.read(name))
            if name.endswith(".json")
            else [orjson.loads(x) for x in archive.read(name).splitlines()]
            for name in archive.namelist()
        }
    schema = orjson.loads(
        (Path(__file__).parents[3] / "docs/export-bundle.schema.json").read_text()
    )
    jsonschema.validate(documented, schema)  # the bundle is what docs/ says it is
    assert set(documented) == set(schema["properties"])

    b = await org_factory()
    job = await run(engine, b, "faq", bundle)
    assert job["status"] == "succeeded" and job["counts"]["failed"] == 0, job
    assert await snapshot(b) == await snapshot(a)

    again = await run(engine, b, "faq", bundle)
    assert again["counts"]["created"] == 0 and again["counts"]["updated"] == 0, again
    assert await snapshot(b) == await snapshot(a)


async def test_exports_are_the_orgs_own(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    job = await _ok(await org.post("/exports"), 202)
    r = await org.get(f"/exports/{job['id']}/download")
    assert r.status_code == 409
    await run_export(engine, org.info.id, job["id"])
    for path in ("", "/download"):
        r = await other_org.get(f"/exports/{job['id']}{path}")
        assert r.status_code == 404
        assert (await r.get_json())["error"]["code"] == "export_not_found"
    r = await org.post("/exports", scope="write")
    assert r.status_code == 403


async def test_a_bundle_of_another_kind_is_refused(org: OrgClient) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("manifest.json", b'{"format": "document360", "version": 1}')
    r = await org.post(
        "/imports",
        data=archive.getvalue(),
        query={"format": "faq"},
        headers={"Content-Type": "application/zip"},
    )
    assert r.status_code == 400
    assert "format is not 'faq-export'" in (await r.get_json())["error"]["details"][0]["issue"]
    r = await org.post(
        "/imports",
        data=b"PK\x03\x04 not really",
        query={"format": "faq"},
        headers={"Content-Type": "application/zip"},
    )
    assert r.status_code == 400
    assert "not a zip file" in (await r.get_json())["error"]["details"][0]["issue"]
