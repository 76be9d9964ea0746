"""Drafts of questions (issue 30): saved beside the live version, published as one PATCH,
conflicts, scheduled publishing by the sweep."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from tasks.publishing import publish_due_questions
from tenancy.clock import iso, utcnow
from tests.api.keys.helpers import as_key, make_public_key
from tests.api.members.helpers import make_member, member_actor, member_key
from tests.api.questions.helpers import create, error_code, question_events
from tests.fixtures.orgs import OrgClient


async def get_question(org: OrgClient, ref: str) -> dict[str, Any]:
    r = await org.get(f"/questions/{ref}", scope="read")
    assert r.status_code == 200
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def put_draft(org: OrgClient, ref: str, **body: Any) -> Any:
    return await org.request("PUT", f"/questions/{ref}/draft", json=body, scope="write")


async def test_a_draft_waits_beside_the_live_version(org: OrgClient, engine: AsyncEngine) -> None:
    q = await create(org, status="published", title="Live title")
    before = await question_events(engine, org, q["id"])
    r = await put_draft(org, q["id"], title="Pending title", order=3)
    assert r.status_code == 200, await r.get_json()
    draft = (await r.get_json())["data"]
    assert draft["questionId"] == q["id"] and draft["title"] == "Pending title"
    assert draft["answer"] == q["answer"] and draft["order"] == 3
    assert draft["changedFields"] == ["title", "order"] and draft["version"] == 1
    assert draft["reviewState"] is None
    assert draft["updatedBy"] == {"type": "apiKey", "id": org.fingerprints["write"]}
    # Readers, publishable keys and webhooks keep the live version.
    assert (await get_question(org, q["id"]))["title"] == "Live title"
    public = await make_public_key(org)
    r = await as_key(org, public["key"], "GET", f"/questions/{q['id']}")
    assert (await r.get_json())["data"]["title"] == "Live title"
    r = await as_key(org, public["key"], "GET", f"/questions/{q['id']}/draft")
    assert r.status_code == 403
    assert await question_events(engine, org, q["id"]) == before
    r = await org.get(f"/questions/{q['slug']}/draft", scope="read")
    assert (await r.get_json())["data"] == draft
    # A second save replaces it and counts a version.
    r = await put_draft(org, q["id"], answer="New answer")
    again = (await r.get_json())["data"]
    assert again["version"] == 2 and again["title"] == "Live title"
    assert again["changedFields"] == ["answer"]
    r = await org.delete(f"/questions/{q['id']}/draft", scope="write")
    assert r.status_code == 204
    r = await org.get(f"/questions/{q['id']}/draft", scope="read")
    assert r.status_code == 404 and error_code(await r.get_json()) == "draft_not_found"


async def test_publish_applies_the_draft_as_one_patch(org: OrgClient, engine: AsyncEngine) -> None:
    member = await make_member(org, "author")
    key = await member_key(org, member, ["write"])
    q = await create(org, status="published")
    r = await as_key(org, key, "PUT", f"/questions/{q['id']}/draft", json={"title": "Better"})
    assert r.status_code == 200
    assert (await r.get_json())["data"]["updatedBy"] == member_actor(member, key)
    r = await as_key(org, key, "POST", f"/questions/{q['id']}/draft/publish")
    assert r.status_code == 200, await r.get_json()
    published = (await r.get_json())["data"]
    assert published["title"] == "Better" and published["status"] == "published"
    assert published["draft"] is None  # gone, as GET shows (issue 40)
    assert await get_question(org, q["id"]) == published
    r = await org.get(f"/questions/{q['id']}/revisions")
    revisions = (await r.get_json())["data"]
    assert len(revisions) == 1
    assert revisions[0]["actor"] == member_actor(member, key)
    assert revisions[0]["changedFields"] == ["title"]
    assert (await question_events(engine, org, q["id"]))[-1:] == ["question.updated"]
    r = await org.get(f"/questions/{q['id']}/draft", scope="read")
    assert r.status_code == 404  # applied: gone


async def test_publishing_the_draft_of_an_unpublished_question_publishes_it(
    org: OrgClient, engine: AsyncEngine
) -> None:
    q = await create(org, status="draft")
    await put_draft(org, q["id"], answer="Ready now")
    r = await org.post(f"/questions/{q['id']}/draft/publish", json={}, scope="write")
    assert r.status_code == 200
    data = (await r.get_json())["data"]
    assert data["status"] == "published" and data["publishedAt"] is not None
    assert data["answer"] == "Ready now"
    assert (await question_events(engine, org, q["id"]))[-2:] == [
        "question.updated",
        "question.published",
    ]


async def test_a_change_after_the_draft_started_is_a_conflict(org: OrgClient) -> None:
    q = await create(org, status="published", title="One")
    await put_draft(org, q["id"], title="Two")
    r = await org.patch(f"/questions/{q['id']}", json={"answer": "Edited live"}, scope="write")
    assert r.status_code == 200
    r = await org.post(f"/questions/{q['id']}/draft/publish", scope="write")
    assert r.status_code == 409
    body = await r.get_json()
    assert body["error"]["code"] == "draft_conflict"
    assert body["error"]["live"]["answer"] == "Edited live"
    assert body["error"]["live"]["title"] == "One"
    assert body["error"]["draft"]["title"] == "Two"
    assert (await get_question(org, q["id"]))["title"] == "One"  # nothing changed
    r = await org.post(f"/questions/{q['id']}/draft/publish", json={"force": True}, scope="write")
    assert r.status_code == 200
    forced = (await r.get_json())["data"]
    assert forced["title"] == "Two" and forced["answer"] == "Edited live"


async def test_bad_drafts_are_refused(org: OrgClient, other_org: OrgClient) -> None:
    q = await create(org, status="published")
    for body, field in (
        ({}, "title"),
        ({"title": ""}, "title"),
        ({"title": None}, "title"),
        ({"status": "draft"}, "status"),
        ({"slug": "Not A Slug"}, "slug"),
    ):
        r = await put_draft(org, q["id"], **body)
        assert r.status_code == 400, body
        err = await r.get_json()
        assert err["error"]["code"] == "validation_failed", err
        assert field in {d["field"] for d in err["error"]["details"]}, err
    r = await put_draft(org, q["id"], categoryId="cat_01HZZZZZZZZZZZZZZZZZZZZZZZ")
    assert r.status_code == 400 and error_code(await r.get_json()) == "category_not_found"
    r = await org.get(f"/questions/{q['id']}/draft", scope="read")
    assert r.status_code == 404  # none was saved
    r = await org.post(f"/questions/{q['id']}/draft/publish", json={"force": "yes"}, scope="write")
    assert r.status_code == 400
    r = await org.post(f"/questions/{q['id']}/draft/publish", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "draft_not_found"
    await put_draft(org, q["id"], title="Mine")
    # Another org's question is nonexistent on every draft route.
    for method, path, body in (
        ("GET", "/draft", None),
        ("PUT", "/draft", {"title": "x"}),
        ("DELETE", "/draft", None),
        ("POST", "/draft/publish", {}),
        ("POST", "/draft/review", {}),
    ):
        r = await other_org.request(method, f"/questions/{q['id']}{path}", json=body)
        assert r.status_code == 404, (method, path)
        assert error_code(await r.get_json()) == "question_not_found"
    assert (await get_question(org, q["id"]))["title"] != "x"


async def test_a_scheduled_draft_is_published_by_the_sweep(
    org: OrgClient, engine: AsyncEngine
) -> None:
    q = await create(org, status="published", title="Before")
    await put_draft(org, q["id"], title="After")
    r = await org.post(
        f"/questions/{q['id']}/draft/publish",
        json={"scheduledPublishAt": iso(utcnow() - timedelta(minutes=1))},
        scope="write",
    )
    assert r.status_code == 400  # in the past
    at = utcnow() + timedelta(seconds=1)
    r = await org.post(
        f"/questions/{q['id']}/draft/publish", json={"scheduledPublishAt": iso(at)}, scope="write"
    )
    assert r.status_code == 202, await r.get_json()
    assert (await r.get_json())["data"]["scheduledPublishAt"] == iso(at)
    await publish_due_questions(engine)
    assert (await get_question(org, q["id"]))["title"] == "Before"  # not yet
    await asyncio.sleep(max(0.0, (at - utcnow()).total_seconds()) + 0.05)
    await publish_due_questions(engine)
    after = await get_question(org, q["id"])
    assert after["title"] == "After" and after["status"] == "published"
    r = await org.get(f"/questions/{q['id']}/revisions")
    assert (await r.get_json())["data"][0]["actor"] == {"type": "system", "id": "scheduler"}
    r = await org.get(f"/questions/{q['id']}/draft", scope="read")
    assert r.status_code == 404
