"""Issue 39, the write side: categories and questions carry ``audiences`` (slugs of live
audiences; empty, everyone), shown in every representation, changed like any other field
(revision, events, audit, review), and never moved to where more readers may see them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tenancy.db import tenant_session
from tests.api.audiences.test_audiences import error, make
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def category(org: OrgClient, **body: Any) -> dict[str, Any]:
    r = await org.post("/categories", json=body)
    assert r.status_code == 201, await r.get_data()
    return dict((await r.get_json())["data"])


async def question(org: OrgClient, category_id: str, **body: Any) -> Any:
    base = {"title": "Partner pricing", "answer": "Ask us.", "status": "draft"}
    return await org.post("/questions", json={**base, "categoryId": category_id, **body})


async def team_org(org_factory: OrgFactory) -> OrgClient:
    org = await org_factory(Plan.PRO)
    await make(org, name="Partners")
    await make(org, name="Staff")
    return org


async def test_a_question_keeps_its_audiences_in_every_shape(org_factory: OrgFactory) -> None:
    org = await team_org(org_factory)
    home = await category(org, name="Pricing")
    r = await question(org, home["id"], audiences=["partners", "staff", "partners"])
    assert r.status_code == 201, await r.get_data()
    made = (await r.get_json())["data"]
    assert made["audiences"] == ["partners", "staff"]
    got = (await (await org.get(f"/questions/{made['id']}")).get_json())["data"]
    assert got == made
    r = await org.patch(f"/questions/{made['id']}", json={"audiences": ["staff"]})
    assert r.status_code == 200
    assert (await r.get_json())["data"]["audiences"] == ["staff"]
    revisions = (await (await org.get(f"/questions/{made['id']}/revisions")).get_json())["data"]
    assert revisions[0]["changedFields"] == ["audiences"]
    assert revisions[0]["snapshot"]["audiences"] == ["partners", "staff"]
    # Restoring the revision brings the audiences back.
    r = await org.post(f"/questions/{made['id']}/revisions/{revisions[0]['id']}/restore")
    assert r.status_code == 200, await r.get_data()
    assert (await r.get_json())["data"]["audiences"] == ["partners", "staff"]
    # A question without them is for everyone.
    r = await question(org, home["id"], title="Open question")
    assert (await r.get_json())["data"]["audiences"] == []


async def test_unknown_audiences_and_null_are_refused(org_factory: OrgFactory) -> None:
    org = await team_org(org_factory)
    home = await category(org, name="Pricing")
    r = await question(org, home["id"], audiences=["partners", "nobody"])
    assert r.status_code == 400 and await error(r) == "validation_failed"
    assert (await r.get_json())["error"]["details"][0]["field"] == "audiences[1]"
    r = await org.post("/categories", json={"name": "Secret", "audiences": ["ghosts"]})
    assert r.status_code == 400
    made = (await (await question(org, home["id"])).get_json())["data"]
    for bad in ({"audiences": None}, {"audiences": ["Not A Slug!"]}, {"audiences": "partners"}):
        r = await org.patch(f"/questions/{made['id']}", json=bad)
        assert r.status_code == 400, bad
    r = await org.patch(f"/categories/{home['id']}", json={"audiences": None})
    assert r.status_code == 400


async def test_a_category_path_carries_its_ancestors_audiences(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await team_org(org_factory)
    parent = await category(org, name="Partners area", audiences=["partners"])
    assert parent["audiences"] == ["partners"]
    child = await category(org, name="Staff corner", parentId=parent["id"], audiences=["staff"])
    plain = await category(org, name="Plain", parentId=parent["id"])

    async def paths() -> dict[str, Any]:
        async with tenant_session(engine, org.info.schema_name) as session:
            rows = await session.execute(text("SELECT id, audience_path FROM categories"))
            return {row[0]: row[1] for row in rows}

    found = await paths()
    assert found[parent["id"]] == [["partners"]]
    assert found[child["id"]] == [["partners"], ["staff"]]
    assert found[plain["id"]] == [["partners"]]
    # Opening the parent to everyone and moving the plain one out follow at once.
    r = await org.patch(f"/categories/{parent['id']}", json={"audiences": []})
    assert r.status_code == 200 and (await r.get_json())["data"]["audiences"] == []
    found = await paths()
    assert found[child["id"]] == [["staff"]] and found[plain["id"]] == []


async def test_an_audience_in_use_can_neither_go_nor_change_slug(
    org_factory: OrgFactory,
) -> None:
    org = await team_org(org_factory)
    home = await category(org, name="Pricing")
    made = (await (await question(org, home["id"], audiences=["partners"])).get_json())["data"]
    r = await org.delete("/audiences/partners")
    assert r.status_code == 409 and await error(r) == "audience_in_use"
    r = await org.patch("/audiences/partners", json={"slug": "resellers"})
    assert r.status_code == 409 and await error(r) == "audience_in_use"
    assert (await org.patch("/audiences/partners", json={"name": "Resellers"})).status_code == 200
    await org.patch(f"/questions/{made['id']}", json={"audiences": []})
    assert (await org.delete("/audiences/partners")).status_code == 204


async def test_deletes_and_merges_never_widen_who_reads(org_factory: OrgFactory) -> None:
    org = await team_org(org_factory)
    closed = await category(org, name="Partners area", audiences=["partners"])
    other = await category(org, name="Open")
    await question(org, closed["id"])
    r = await org.delete(f"/categories/{closed['id']}?force=true")
    assert r.status_code == 409 and await error(r) == "audience_in_use"
    r = await org.post(
        "/categories/merge", json={"sourceId": closed["id"], "targetId": other["id"]}
    )
    assert r.status_code == 409 and await error(r) == "audience_in_use"
    same = await category(org, name="Partners too", audiences=["partners"])
    r = await org.post("/categories/merge", json={"sourceId": closed["id"], "targetId": same["id"]})
    assert r.status_code == 200, await r.get_data()


async def test_changing_a_live_questions_audiences_needs_review_when_required(
    org_factory: OrgFactory,
) -> None:
    org = await team_org(org_factory)
    home = await category(org, name="Pricing")
    live = (await (await question(org, home["id"], status="published")).get_json())["data"]
    r = await org.patch("/settings/workflow", json={"requireReview": True})
    assert r.status_code == 200, await r.get_data()
    r = await org.patch(f"/questions/{live['id']}", json={"audiences": ["partners"]})
    assert r.status_code == 403 and await error(r) == "review_required"
