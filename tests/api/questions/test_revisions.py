"""Revisions: one per PATCH, newest first, restore, the 50 newest kept."""

from __future__ import annotations

import asyncio

from tests.api.questions.helpers import create, error_code, fields, question_events


async def revisions(org, ref, **query):
    r = await org.get(f"/questions/{ref}/revisions", query=query or None, scope="read")
    assert r.status_code == 200, await r.get_json()
    return await r.get_json()


async def test_each_patch_writes_one_revision_with_the_state_before(org):
    q = await create(org, title="First", answer="One")
    path = f"/questions/{q['id']}"
    assert (await revisions(org, q["id"]))["data"] == []
    await org.patch(path, json={"title": "Second"}, scope="write")
    await org.patch(path, json={"answer": "Two", "order": 4}, scope="write")
    await org.patch(path, json={"order": 4}, scope="write")  # changes nothing, still a PATCH
    body = await revisions(org, q["slug"])
    data = body["data"]
    assert [r["number"] for r in data] == [3, 2, 1]
    assert data[2]["changedFields"] == ["title"]
    assert data[2]["snapshot"] == {
        "title": "First",
        "answer": "One",
        "categoryId": q["categoryId"],
        "status": "draft",
        "slug": q["slug"],
        "order": 0,
        "scheduledPublishAt": None,
        "audiences": [],  # issue 39
    }
    assert data[1]["changedFields"] == ["answer", "order"]
    assert data[1]["snapshot"]["title"] == "Second"
    assert data[0]["changedFields"] == []
    assert data[0]["actor"] == {"type": "apiKey", "id": org.fingerprints["write"]}
    assert all(r["id"].startswith("rev_") and r["createdAt"].endswith("Z") for r in data)
    assert set(data[0]) == {"id", "number", "actor", "changedFields", "snapshot", "createdAt"}
    assert body["meta"]["pagination"] == {"limit": 20, "cursor": None, "hasMore": False}


async def test_revision_pages(org, other_org):
    q = await create(org)
    for i in range(5):
        await org.patch(f"/questions/{q['id']}", json={"order": i + 1}, scope="write")
    seen, cursor = [], None
    while True:
        body = await revisions(org, q["id"], limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [r["number"] for r in body["data"]]
        cursor = body["meta"]["pagination"]["cursor"]
        if cursor is None:
            break
    assert seen == [5, 4, 3, 2, 1]
    # A cursor of one question's revisions is refused on another's.
    other = await create(org, title="Other")
    body = await revisions(org, q["id"], limit=2)
    r = await org.get(
        f"/questions/{other['id']}/revisions",
        query={"cursor": body["meta"]["pagination"]["cursor"]},
        scope="read",
    )
    assert r.status_code == 400 and fields(await r.get_json()) == {"cursor"}
    r = await org.get(f"/questions/{q['id']}/revisions", query={"limit": 101}, scope="read")
    assert r.status_code == 400 and fields(await r.get_json()) == {"limit"}


async def test_restore_applies_the_snapshot_as_a_new_patch(engine, org):
    q = await create(org, title="Original", answer="Original answer", status="published")
    path = f"/questions/{q['id']}"
    await org.patch(
        path, json={"title": "Edited", "status": "draft", "slug": "edited"}, scope="write"
    )
    first = (await revisions(org, q["id"]))["data"][0]
    r = await org.post(f"{path}/revisions/{first['id']}/restore", scope="write")
    assert r.status_code == 200
    restored = (await r.get_json())["data"]
    assert restored["title"] == "Original" and restored["slug"] == q["slug"]
    assert restored["status"] == "published" and restored["publishedAt"] is not None
    r = await org.get(path, scope="read")
    # The restore's response is the question as GET shows it (issue 40).
    assert (await r.get_json())["data"] == restored
    data = (await revisions(org, q["id"]))["data"]
    assert [r["number"] for r in data] == [2, 1]
    assert data[0]["snapshot"]["title"] == "Edited"
    assert set(data[0]["changedFields"]) == {"title", "slug", "status", "publishedAt"}
    assert (await question_events(engine, org, q["id"]))[-2:] == [
        "question.updated",
        "question.published",
    ]


async def test_restore_of_an_unknown_or_other_questions_revision_is_404(org):
    a = await create(org, title="A")
    b = await create(org, title="B")
    await org.patch(f"/questions/{a['id']}", json={"title": "A2"}, scope="write")
    rev = (await revisions(org, a["id"]))["data"][0]["id"]
    r = await org.post(f"/questions/{b['id']}/revisions/{rev}/restore", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "revision_not_found"
    r = await org.post(f"/questions/{a['id']}/revisions/rev_nope/restore", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "revision_not_found"
    r = await org.post(f"/questions/q_nope/revisions/{rev}/restore", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "question_not_found"


async def test_only_the_50_newest_revisions_are_kept(org):
    q = await create(org)
    for i in range(51):
        r = await org.patch(f"/questions/{q['id']}", json={"order": i + 1}, scope="write")
        assert r.status_code == 200
    numbers = [r["number"] for r in (await revisions(org, q["id"], limit=100))["data"]]
    assert numbers == list(range(51, 1, -1))
    oldest = (await revisions(org, q["id"], limit=100))["data"][-1]
    assert oldest["snapshot"]["order"] == 1
    await org.patch(f"/questions/{q['id']}", json={"order": 0}, scope="write")
    numbers = [r["number"] for r in (await revisions(org, q["id"], limit=100))["data"]]
    assert numbers == list(range(52, 2, -1))


async def test_concurrent_patches_never_lose_a_revision(org):
    q = await create(org)
    results = await asyncio.gather(
        *(
            org.patch(f"/questions/{q['id']}", json={"title": f"Title {i}"}, scope="write")
            for i in range(8)
        )
    )
    assert [r.status_code for r in results] == [200] * 8
    data = (await revisions(org, q["id"]))["data"]
    assert sorted(r["number"] for r in data) == list(range(1, 9))
    # Each snapshot is the state the previous PATCH left: a chain without gaps.
    by_number = {r["number"]: r for r in data}
    titles = [by_number[n]["snapshot"]["title"] for n in range(2, 9)]
    assert len(set(titles)) == 7
