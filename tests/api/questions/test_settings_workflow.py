"""``workflow.requireReview`` is part of ``GET/PATCH /settings`` too (issue 30): the same
setting as ``/settings/workflow``, PRO to turn on, audited, and a refused change changes
nothing."""

from __future__ import annotations

from typing import Any

from billing.plans import Plan
from tests.api.questions.helpers import create, error_code
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def settings_of(org: OrgClient) -> dict[str, Any]:
    r = await org.get("/settings", scope="read")
    assert r.status_code == 200
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def workflow_of(org: OrgClient) -> Any:
    r = await org.get("/settings/workflow", scope="read")
    return (await r.get_json())["data"]


async def test_settings_show_and_change_the_workflow(org_factory: OrgFactory) -> None:
    pro = await org_factory(Plan.PRO)
    assert (await settings_of(pro))["workflow"] == {"requireReview": False}
    r = await pro.patch("/settings", json={"workflow": {"requireReview": True}})
    assert r.status_code == 200, await r.get_data()
    body = (await r.get_json())["data"]
    assert body["workflow"] == {"requireReview": True}
    assert body == await settings_of(pro)
    # Both routes, one setting: and it is enforced.
    assert await workflow_of(pro) == {"requireReview": True}
    r = await pro.post("/questions", json=await _published(pro), scope="write")
    assert r.status_code == 403 and error_code(await r.get_json()) == "review_required"
    assert (await pro.patch("/settings/workflow", json={"requireReview": False})).status_code == 200
    assert (await settings_of(pro))["workflow"] == {"requireReview": False}
    # An empty part and other fields alone leave it as it is.
    r = await pro.patch("/settings", json={"workflow": {}})
    assert (
        r.status_code == 200 and (await r.get_json())["data"]["workflow"]["requireReview"] is False
    )
    r = await pro.patch(
        "/settings", json={"workflow": {"requireReview": True}, "locales": ["en", "fr"]}
    )
    assert r.status_code == 200
    data = (await r.get_json())["data"]
    assert data["workflow"] == {"requireReview": True} and data["locales"] == ["en", "fr"]


async def _published(org: OrgClient) -> dict[str, Any]:
    q = await create(org)
    return {
        "title": "Another",
        "answer": "Yes.",
        "categoryId": q["categoryId"],
        "status": "published",
    }


async def test_bad_or_refused_workflow_changes_change_nothing(
    org_factory: OrgFactory, org: OrgClient
) -> None:
    starter = await org_factory(Plan.STARTER)
    before = await settings_of(starter)
    assert before["workflow"] == {"requireReview": False}
    r = await starter.patch(
        "/settings", json={"locales": ["en", "de"], "workflow": {"requireReview": True}}
    )
    assert r.status_code == 403 and error_code(await r.get_json()) == "plan_required"
    assert await settings_of(starter) == before
    pro = await org_factory(Plan.PRO)
    before = await settings_of(pro)
    for bad in (
        {"workflow": None},
        {"workflow": {"requireReview": None}},
        {"workflow": {"requireReview": "yes"}},
        {"workflow": {"other": True}},
        {"workflow": True},
        {"workflow": {"requireReview": True}, "locales": None},
    ):
        r = await pro.patch("/settings", json=bad)
        assert r.status_code == 400, bad
        assert error_code(await r.get_json()) == "validation_failed"
    r = await pro.patch("/settings", json={"workflow": {"requireReview": True}}, scope="write")
    assert r.status_code == 403
    assert await settings_of(pro) == before
    assert await workflow_of(pro) == {"requireReview": False}
    # Turning it off is allowed on any plan; another org is untouched.
    r = await starter.patch("/settings", json={"workflow": {"requireReview": False}})
    assert r.status_code == 200
    assert (await settings_of(org))["workflow"] == {"requireReview": False}
