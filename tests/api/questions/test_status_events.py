"""Status and scheduling rules (CONTRACT section 5) and the events each mutation writes."""

from __future__ import annotations

import pytest

from tests.api.questions.helpers import (
    create,
    default_category,
    error_code,
    events,
    fields,
    question_events,
)

FUTURE = "2099-03-01T10:00:00.000Z"
LATER = "2099-04-01T10:00:00.000Z"


async def test_draft_with_a_time_is_scheduled(org):
    q = await create(org, status="draft", scheduledPublishAt="2099-03-01T11:00:00+01:00")
    assert q["status"] == "scheduled"
    assert q["scheduledPublishAt"] == FUTURE
    assert q["publishedAt"] is None
    q2 = await create(org, status="scheduled", scheduledPublishAt=FUTURE)
    assert q2["status"] == "scheduled"


@pytest.mark.parametrize(
    ("status", "at"),
    [("scheduled", None), ("published", FUTURE), ("archived", FUTURE)],
)
async def test_contradictory_status_and_time_are_refused_on_create(org, status, at):
    category_id = await default_category(org)
    body = {"title": "T", "answer": "A", "categoryId": category_id, "status": status}
    if at is not None:
        body["scheduledPublishAt"] = at
    r = await org.post("/questions", json=body, scope="write")
    assert r.status_code == 400
    body = await r.get_json()
    assert error_code(body) == "validation_failed"
    assert fields(body) == {"scheduledPublishAt"}


async def test_published_at_follows_the_published_status(org):
    q = await create(org, status="published")
    assert q["status"] == "published" and q["publishedAt"] is not None
    r = await org.patch(f"/questions/{q['id']}", json={"status": "archived"}, scope="write")
    data = (await r.get_json())["data"]
    assert data["status"] == "archived" and data["publishedAt"] is None
    r = await org.patch(f"/questions/{q['id']}", json={"status": "published"}, scope="write")
    first = (await r.get_json())["data"]["publishedAt"]
    assert first is not None
    r = await org.patch(f"/questions/{q['id']}", json={"title": "Edited"}, scope="write")
    assert (await r.get_json())["data"]["publishedAt"] == first  # still published: unchanged
    r = await org.patch(f"/questions/{q['id']}", json={"status": "draft"}, scope="write")
    assert (await r.get_json())["data"]["publishedAt"] is None


async def test_scheduling_through_patch(org):
    q = await create(org)
    path = f"/questions/{q['id']}"
    r = await org.patch(path, json={"scheduledPublishAt": FUTURE}, scope="write")
    data = (await r.get_json())["data"]
    assert data["status"] == "scheduled" and data["scheduledPublishAt"] == FUTURE
    r = await org.patch(path, json={"scheduledPublishAt": LATER}, scope="write")
    assert (await r.get_json())["data"]["scheduledPublishAt"] == LATER
    r = await org.patch(path, json={"status": "scheduled"}, scope="write")
    assert (await r.get_json())["data"]["scheduledPublishAt"] == LATER  # keeps its time
    # Clearing the time returns it to draft.
    r = await org.patch(path, json={"scheduledPublishAt": None}, scope="write")
    data = (await r.get_json())["data"]
    assert data["status"] == "draft" and data["scheduledPublishAt"] is None
    r = await org.patch(path, json={"status": "scheduled"}, scope="write")
    assert r.status_code == 400 and fields(await r.get_json()) == {"scheduledPublishAt"}
    r = await org.patch(path, json={"status": "draft", "scheduledPublishAt": FUTURE}, scope="write")
    assert (await r.get_json())["data"]["status"] == "scheduled"
    # Sending a status moves to it: draft alone unschedules, published publishes now.
    r = await org.patch(path, json={"status": "draft"}, scope="write")
    data = (await r.get_json())["data"]
    assert data["status"] == "draft" and data["scheduledPublishAt"] is None
    await org.patch(path, json={"scheduledPublishAt": FUTURE}, scope="write")
    r = await org.patch(path, json={"status": "published"}, scope="write")
    data = (await r.get_json())["data"]
    assert data["status"] == "published" and data["scheduledPublishAt"] is None
    assert data["publishedAt"] is not None
    # A published or archived question cannot carry a time.
    r = await org.patch(path, json={"scheduledPublishAt": FUTURE}, scope="write")
    assert r.status_code == 400 and fields(await r.get_json()) == {"scheduledPublishAt"}
    r = await org.patch(
        path, json={"status": "archived", "scheduledPublishAt": FUTURE}, scope="write"
    )
    assert r.status_code == 400 and fields(await r.get_json()) == {"scheduledPublishAt"}
    r = await org.get(path, scope="read")
    assert (await r.get_json())["data"]["status"] == "published"  # refused PATCHes changed nothing


async def test_create_events(engine, org):
    draft = await create(org)
    published = await create(org, title="Live one", status="published")
    assert await question_events(engine, org, draft["id"]) == ["question.created"]
    assert await question_events(engine, org, published["id"]) == [
        "question.created",
        "question.published",
    ]
    data = [d for e, d in await events(engine, org) if d["id"] == published["id"]]
    assert all(d == published for d in data)


async def test_patch_events(engine, org):
    q = await create(org)
    path = f"/questions/{q['id']}"
    await org.patch(path, json={"title": q["title"]}, scope="write")  # no change: no event
    assert await question_events(engine, org, q["id"]) == ["question.created"]
    r = await org.patch(path, json={"title": "Changed"}, scope="write")
    changed = (await r.get_json())["data"]
    await org.patch(path, json={"status": "published"}, scope="write")
    await org.patch(path, json={"status": "archived"}, scope="write")
    await org.patch(path, json={"scheduledPublishAt": None}, scope="write")  # already null
    assert await question_events(engine, org, q["id"]) == [
        "question.created",
        "question.updated",
        "question.updated",
        "question.published",
        "question.updated",
        "question.unpublished",
    ]
    evs = [(e, d) for e, d in await events(engine, org) if d["id"] == q["id"]]
    assert evs[1][1] == changed
    r = await org.get(path, scope="read")
    # Events carry the question as GET shows it (issue 40): its draft (issue 30) and its
    # import's source (issue 29), none here.
    assert evs[-1][1] == (await r.get_json())["data"]
    assert evs[-1][1]["status"] == "archived"


async def test_delete_event_carries_the_question_as_it_was(engine, org):
    q = await create(org, status="published")
    r = await org.get(f"/questions/{q['id']}", scope="read")
    as_was = (await r.get_json())["data"]
    assert as_was["draft"] is None  # reads and events show the draft (issues 30, 40)
    assert as_was["externalId"] is None  # events show the import's source as reads do
    await org.delete(f"/questions/{q['id']}", scope="write")
    evs = [(e, d) for e, d in await events(engine, org) if d["id"] == q["id"]]
    assert evs[-1] == ("question.deleted", as_was)


async def test_failed_requests_write_no_event(engine, org):
    q = await create(org, slug="taken")
    other = await create(org, title="Other")
    before = await events(engine, org)
    r = await org.patch(f"/questions/{other['id']}", json={"slug": "taken"}, scope="write")
    assert r.status_code == 409
    r = await org.patch(
        f"/questions/{q['id']}", json={"title": "x", "categoryId": "cat_nope"}, scope="write"
    )
    assert r.status_code == 400
    assert await events(engine, org) == before
    r = await org.get(f"/questions/{q['id']}", scope="read")
    assert (await r.get_json())["data"]["title"] == q["title"]
