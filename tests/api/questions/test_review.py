"""Review before publishing (issue 30): workflow.requireReview (PRO), review, approve,
reject, four eyes, the refusals, GET /reviews, audit and events."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.api.audit.conftest import relayed_audit
from tests.api.keys.helpers import as_key, make_key
from tests.api.members.helpers import make_member, member_actor, member_key
from tests.api.questions.helpers import create, error_code, events
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def require_review(org: OrgClient, on: bool = True) -> Any:
    return await org.patch("/settings/workflow", json={"requireReview": on})


async def team(org: OrgClient) -> dict[str, tuple[dict[str, Any], str]]:
    """An author and two editors, each with a key of their role's scopes."""
    out = {}
    for name, role, scopes in (
        ("author", "author", ["write"]),
        ("editor", "editor", ["write", "review"]),
        ("editor2", "editor", ["write", "review"]),
    ):
        member = await make_member(org, role)
        out[name] = (member, await member_key(org, member, scopes))
    return out


async def test_require_review_is_a_pro_setting(org_factory: OrgFactory) -> None:
    starter = await org_factory(Plan.STARTER)
    r = await starter.get("/settings/workflow", scope="read")
    assert (await r.get_json())["data"] == {"requireReview": False}
    r = await require_review(starter)
    assert r.status_code == 403 and error_code(await r.get_json()) == "plan_required"
    r = await starter.get("/settings/workflow", scope="read")
    assert (await r.get_json())["data"] == {"requireReview": False}
    pro = await org_factory(Plan.PRO)
    r = await require_review(pro)
    assert r.status_code == 200
    assert (await r.get_json())["data"] == {"requireReview": True}
    for bad in ({"requireReview": "yes"}, {"other": True}, {"requireReview": None}):
        r = await pro.patch("/settings/workflow", json=bad)
        assert r.status_code == 400 and error_code(await r.get_json()) == "validation_failed"
    r = await pro.patch("/settings/workflow", json={"requireReview": False}, scope="write")
    assert r.status_code == 403
    r = await pro.get("/settings/workflow", scope="read")
    assert (await r.get_json())["data"] == {"requireReview": True}
    r = await require_review(pro, False)
    assert (await r.get_json())["data"] == {"requireReview": False}


async def test_with_review_required_only_an_approved_draft_is_published(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await org_factory(Plan.PRO)
    people = await team(org)
    author, author_key = people["author"]
    editor, editor_key = people["editor"]
    live = await create(org, status="published", title="Live")
    draft_q = await create(org, status="draft", title="Unpublished")
    assert (await require_review(org)).status_code == 200
    # Every direct way to published is refused.
    for method, path, body in (
        (
            "POST",
            "/questions",
            {
                **{k: draft_q[k] for k in ("answer", "categoryId")},
                "title": "New",
                "status": "published",
            },
        ),
        ("PATCH", f"/questions/{draft_q['id']}", {"status": "published"}),
        ("PATCH", f"/questions/{live['id']}", {"title": "Straight to live"}),
        ("PATCH", f"/questions/{draft_q['id']}", {"scheduledPublishAt": "2099-01-01T00:00:00Z"}),
    ):
        r = await as_key(org, author_key, method, path, json=body)
        assert r.status_code == 403, (method, path, await r.get_json())
        assert error_code(await r.get_json()) == "review_required"
    # Unpublishing and edits of unpublished questions stay direct.
    r = await as_key(org, author_key, "PATCH", f"/questions/{draft_q['id']}", json={"title": "T"})
    assert r.status_code == 200
    # Draft, review, approval by another member, publish.
    r = await as_key(
        org, author_key, "PUT", f"/questions/{live['id']}/draft", json={"title": "Reviewed"}
    )
    assert r.status_code == 200
    r = await as_key(org, author_key, "POST", f"/questions/{live['id']}/draft/publish")
    assert r.status_code == 403 and error_code(await r.get_json()) == "review_required"
    r = await as_key(
        org,
        author_key,
        "POST",
        f"/questions/{live['id']}/draft/review",
        json={"reviewerIds": [editor["id"]]},
    )
    assert r.status_code == 200
    assert (await r.get_json())["data"]["reviewState"] == "pending"
    r = await as_key(org, author_key, "POST", f"/questions/{live['id']}/draft/approve")
    assert r.status_code == 403  # an author has no review scope
    r = await org.get("/reviews", query={"reviewer": editor["id"]}, scope="read")
    listed = (await r.get_json())["data"]
    assert [d["questionId"] for d in listed] == [live["id"]]
    r = await org.get("/reviews", query={"reviewer": people["editor2"][0]["id"]}, scope="read")
    assert (await r.get_json())["data"] == []
    r = await as_key(
        org,
        editor_key,
        "POST",
        f"/questions/{live['id']}/draft/approve",
        json={"comment": "Looks right", "version": 1},
    )
    assert r.status_code == 200, await r.get_json()
    approved = (await r.get_json())["data"]
    assert approved["reviewState"] == "approved" and approved["approvedVersion"] == 1
    assert approved["decision"] == {
        "by": member_actor(editor, editor_key),
        "comment": "Looks right",
    }
    r = await as_key(org, author_key, "POST", f"/questions/{live['id']}/draft/publish")
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["data"]["title"] == "Reviewed"
    # Each step is audited and emits its event.
    names = [e for e, d in await events(engine, org) if d.get("questionId") == live["id"]]
    assert names == ["question.review_requested", "question.approved"]
    audit = await relayed_audit(engine, org, limit=100, resourceId=live["id"])
    actions = {(e["action"], e["actor"]["id"]) for e in audit}
    assert {
        ("review_requested", author["id"]),
        ("approved", editor["id"]),
        ("draft_saved", author["id"]),
        ("draft_published", author["id"]),
    } <= actions


async def test_four_eyes(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.PRO)
    people = await team(org)
    editor_key = people["editor"][1]
    other_key = people["editor2"][1]
    q = await create(org, status="published")
    await require_review(org)
    r = await as_key(org, editor_key, "PUT", f"/questions/{q['id']}/draft", json={"title": "Mine"})
    assert r.status_code == 200
    r = await as_key(org, editor_key, "POST", f"/questions/{q['id']}/draft/approve")
    assert r.status_code == 403 and error_code(await r.get_json()) == "self_approval"
    # A key of no member is no one: it cannot decide.
    admin = await make_key(org, scopes=["admin"])
    r = await as_key(org, admin["key"], "POST", f"/questions/{q['id']}/draft/approve")
    assert r.status_code == 403 and error_code(await r.get_json()) == "member_required"
    r = await as_key(org, other_key, "POST", f"/questions/{q['id']}/draft/approve")
    assert r.status_code == 200
    # Any change clears the approval; the changer is now the author.
    r = await as_key(org, other_key, "PUT", f"/questions/{q['id']}/draft", json={"title": "Tweak"})
    changed = (await r.get_json())["data"]
    assert changed["reviewState"] == "pending" and changed["approvedVersion"] is None
    r = await as_key(org, editor_key, "POST", f"/questions/{q['id']}/draft/publish")
    assert r.status_code == 403 and error_code(await r.get_json()) == "review_required"
    r = await as_key(org, other_key, "POST", f"/questions/{q['id']}/draft/approve")
    assert r.status_code == 403 and error_code(await r.get_json()) == "self_approval"
    r = await as_key(
        org, editor_key, "POST", f"/questions/{q['id']}/draft/approve", json={"version": 1}
    )
    assert r.status_code == 409 and error_code(await r.get_json()) == "draft_changed"
    r = await as_key(
        org, editor_key, "POST", f"/questions/{q['id']}/draft/reject", json={"comment": "No"}
    )
    assert (await r.get_json())["data"]["reviewState"] == "rejected"
    r = await org.get("/reviews", query={"state": "rejected"}, scope="read")
    assert [d["questionId"] for d in (await r.get_json())["data"]] == [q["id"]]
    r = await as_key(org, editor_key, "POST", f"/questions/{q['id']}/draft/publish")
    assert r.status_code == 403
    r = await as_key(org, editor_key, "POST", f"/questions/{q['id']}/draft/approve")
    assert r.status_code == 200
    r = await as_key(org, other_key, "POST", f"/questions/{q['id']}/draft/publish")
    assert r.status_code == 200 and (await r.get_json())["data"]["title"] == "Tweak"


async def test_reviews_of_another_org_are_invisible(
    org_factory: OrgFactory, other_org: OrgClient
) -> None:
    org = await org_factory(Plan.PRO)
    people = await team(org)
    q = await create(org, status="published")
    await org.request("PUT", f"/questions/{q['id']}/draft", json={"title": "x"})
    await org.post(f"/questions/{q['id']}/draft/review", json={})
    r = await other_org.get("/reviews")
    assert (await r.get_json())["data"] == []
    r = await org.get("/reviews")
    assert [d["questionId"] for d in (await r.get_json())["data"]] == [q["id"]]
    # A member of another org is no reviewer here.
    stranger = await make_member(other_org)
    r = await org.post(f"/questions/{q['id']}/draft/review", json={"reviewerIds": [stranger["id"]]})
    assert r.status_code == 400
    r = await as_key(
        org,
        people["editor"][1],
        "POST",
        f"/questions/{q['id']}/draft/approve",
        json={"comment": "x" * 5001},
    )
    assert r.status_code == 400


async def test_review_is_in_openapi_and_the_catalog(client: Any) -> None:
    from api.events import EVENT_CATALOG

    assert {"question.review_requested", "question.approved", "question.rejected"} <= set(
        EVENT_CATALOG
    )
    paths = (await (await client.get("/openapi.json")).get_json())["paths"]
    for path in ("/draft", "/draft/publish", "/draft/review", "/draft/approve", "/draft/reject"):
        assert f"/api/v1/{{org}}/questions/{{ref}}{path}" in paths, path
    assert "/api/v1/{org}/reviews" in paths
    assert {"get", "patch"} <= set(paths["/api/v1/{org}/settings/workflow"])
    assert "/api/v1/{org}/questions/{ref}/revisions/{revision_id}/diff" in paths
