"""Issue 39 in exports and imports: the bundle carries each category's and question's
``audiences`` and the org's audiences themselves (``audiences.ndjson``); importing it (format
``faq``) keeps them, matched by slug; an audience the importing org lacks fails its item, in
the report, and changes nothing of it."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.api.audiences.test_audiences import make
from tests.api.exports.test_round_trip import export_bundle
from tests.api.imports.helpers import all_categories, all_questions, run
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

SCHEMA = Path(__file__).parents[3] / "docs/export-bundle.schema.json"


async def data(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, await r.get_data()
    return (await r.get_json())["data"]


async def seed(org: OrgClient) -> None:
    await make(org, name="Partners", description="Resellers")
    await make(org, name="Staff")
    area = await data(
        await org.post("/categories", json={"name": "Partner area", "audiences": ["partners"]}),
        201,
    )
    for title, audiences in (("Partner prices", ["staff", "partners"]), ("Open", [])):
        body = {"title": title, "answer": "A.", "categoryId": area["id"], "status": "published"}
        await data(await org.post("/questions", json={**body, "audiences": audiences}), 201)


def files(bundle: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        return {
            name: orjson.loads(archive.read(name))
            if name.endswith(".json")
            else [orjson.loads(x) for x in archive.read(name).splitlines()]
            for name in archive.namelist()
        }


async def audiences_of(org: OrgClient) -> dict[str, Any]:
    """Who each category and question is for, and the org's audiences, by slug or title."""
    listed = await data(await org.get("/audiences"))
    return {
        "audiences": {a["slug"]: (a["name"], a["description"]) for a in listed},
        "categories": {c["slug"]: c["audiences"] for c in await all_categories(org)},
        "questions": {q["title"]: q["audiences"] for q in await all_questions(org)},
    }


async def copied(
    org_factory: OrgFactory, engine: AsyncEngine
) -> tuple[OrgClient, bytes, OrgClient, dict[str, Any]]:
    """A seeded PRO org, its bundle, a fresh PRO org the bundle was imported into, the job."""
    a = await org_factory(Plan.PRO)
    await seed(a)
    bundle = await export_bundle(engine, a)
    b = await org_factory(Plan.PRO)
    job = await run(engine, b, "faq", bundle)
    assert job["status"] == "succeeded" and job["counts"]["failed"] == 0, job
    return a, bundle, b, job


async def test_a_bundle_carries_audiences_and_an_import_keeps_them(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    a, bundle, b, job = await copied(org_factory, engine)
    found = files(bundle)
    jsonschema.validate(found, orjson.loads(SCHEMA.read_text()))
    assert [(x["slug"], x["name"], x["description"]) for x in found["audiences.ndjson"]] == [
        ("partners", "Partners", "Resellers"),
        ("staff", "Staff", None),
    ]
    assert found["manifest.json"]["counts"]["audiences"] == 2
    by_name = {c["name"]: c["audiences"] for c in found["categories.ndjson"]}
    assert by_name["Partner area"] == ["partners"] and by_name["Uncategorized"] == []
    by_title = {q["title"]: q["audiences"] for q in found["questions.ndjson"]}
    assert by_title == {"Partner prices": ["staff", "partners"], "Open": []}

    assert job["countsByKind"]["audiences"]["created"] == 2, job
    assert await audiences_of(b) == await audiences_of(a)

    again = await run(engine, b, "faq", bundle)
    assert again["counts"]["created"] == again["counts"]["updated"] == 0, again
    assert again["countsByKind"]["audiences"]["unchanged"] == 2, again


async def test_a_reimport_puts_the_bundles_audiences_back(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    _, bundle, b, _ = await copied(org_factory, engine)
    before = await audiences_of(b)
    prices = next(q for q in await all_questions(b) if q["title"] == "Partner prices")
    area = next(c for c in await all_categories(b) if c["name"] == "Partner area")
    await data(await b.patch(f"/questions/{prices['id']}", json={"audiences": []}))
    await data(await b.patch(f"/categories/{area['id']}", json={"audiences": ["staff"]}))
    await data(await b.patch("/audiences/staff", json={"name": "Employees"}))
    job = await run(engine, b, "faq", bundle)
    assert job["counts"]["failed"] == 0, job
    kinds = job["countsByKind"]
    assert (kinds["questions"]["updated"], kinds["categories"]["updated"]) == (1, 1), job
    assert kinds["audiences"]["updated"] == 1, job
    assert await audiences_of(b) == before


def bundle_of(**ndjson: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("manifest.json", orjson.dumps({"format": "faq-export", "version": 1}))
        for name, lines in ndjson.items():
            z.writestr(f"{name}.ndjson", b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return out.getvalue()


def question_line(id_: str, title: str, **fields: Any) -> dict[str, Any]:
    return {"id": id_, "categoryId": "cat_1", "title": title, "answer": "A.", **fields}


async def test_unknown_audiences_fail_their_item_and_change_nothing(
    org: OrgClient, engine: AsyncEngine
) -> None:
    first = bundle_of(
        categories=[{"id": "cat_1", "name": "Help"}],
        questions=[question_line("q_1", "Kept", status="draft")],
    )
    job = await run(engine, org, "faq", first)
    assert job["counts"] == {"created": 2, "updated": 0, "unchanged": 0, "failed": 0}, job
    # The org (STARTER) has no audience "ghosts": the items naming it fail, nothing of them
    # is written, the others are.
    second = bundle_of(
        categories=[
            {"id": "cat_1", "name": "Help"},
            {"id": "cat_2", "name": "Haunted", "audiences": ["ghosts"]},
        ],
        questions=[
            question_line("q_1", "Renamed", status="draft", audiences=["ghosts"]),
            question_line("q_2", "New ghost", status="published", audiences=["ghosts"]),
            question_line("q_3", "Bad list", status="draft", audiences="ghosts"),
            question_line("q_4", "Fine", status="draft", audiences=[]),
        ],
    )
    job = await run(engine, org, "faq", second)
    assert job["status"] == "succeeded", job
    errors = {(e["item"], e["field"]) for e in job["errors"]}
    assert errors == {
        ("faq:cat_2", "audiences[0]"),
        ("faq:q_1", "audiences[0]"),
        ("faq:q_2", "audiences[0]"),
        ("faq:q_3", "audiences"),
    }, job
    assert all("ghosts" in e["issue"] or "list" in e["issue"] for e in job["errors"]), job
    assert job["countsByKind"]["questions"] == {
        "created": 1,
        "updated": 0,
        "unchanged": 0,
        "failed": 3,
    }, job
    titles = sorted(q["title"] for q in await all_questions(org))
    assert titles == ["Fine", "Kept"]  # q_1 kept its title: its failed update wrote nothing
    assert "haunted" not in {c["slug"] for c in await all_categories(org)}


async def test_audiences_past_the_plan_cap_fail_as_items(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    free = await org_factory(Plan.FREE)  # no audiences on FREE
    bundle = bundle_of(
        audiences=[{"id": "aud_1", "slug": "partners", "name": "Partners"}],
        categories=[{"id": "cat_1", "name": "Help"}],
        questions=[
            question_line("q_1", "Restricted", status="draft", audiences=["partners"]),
            question_line("q_2", "Public", status="draft"),
        ],
    )
    job = await run(engine, free, "faq", bundle)
    assert job["status"] == "succeeded", job
    assert job["countsByKind"]["audiences"]["failed"] == 1, job
    assert {(e["item"], e["field"]) for e in job["errors"]} == {
        ("faq:aud_1", "item"),  # as a question past the cap
        ("faq:q_1", "audiences[0]"),
    }, job
    assert [q["title"] for q in await all_questions(free)] == ["Public"]
    assert await data(await free.get("/audiences")) == []
