"""Reorder (all or nothing) and a cross-org negative test for every question endpoint."""

from __future__ import annotations

from tests.api.questions.helpers import create, error_code, fields, question_events


async def orders(org):
    r = await org.get("/questions", query={"limit": 100}, scope="read")
    return {q["id"]: q["order"] for q in (await r.get_json())["data"]}


async def test_reorder_assigns_positions_and_leaves_others(engine, org):
    a, b, c, d = [await create(org, title=f"Q{i}", order=7) for i in range(4)]
    r = await org.post("/questions/reorder", json={"ids": [c["id"], a["id"]]}, scope="write")
    assert r.status_code == 200
    assert await r.get_json() == {"data": {"updated": 2}}
    assert await orders(org) == {a["id"]: 1, b["id"]: 7, c["id"]: 0, d["id"]: 7}
    assert await question_events(engine, org, c["id"]) == ["question.created", "question.updated"]
    assert await question_events(engine, org, b["id"]) == ["question.created"]
    r = await org.get(f"/questions/{c['id']}/revisions", scope="read")
    revs = (await r.get_json())["data"]
    assert len(revs) == 1 and revs[0]["changedFields"] == ["order"]
    assert revs[0]["snapshot"]["order"] == 7
    # Listing the same order again changes nothing and emits nothing.
    r = await org.post("/questions/reorder", json={"ids": [c["id"], a["id"]]}, scope="write")
    assert (await r.get_json())["data"]["updated"] == 2
    assert await question_events(engine, org, c["id"]) == ["question.created", "question.updated"]


async def test_reorder_is_all_or_nothing(org, other_org):
    a = await create(org, title="A", order=5)
    deleted = await create(org, title="Gone")
    await org.delete(f"/questions/{deleted['id']}", scope="write")
    foreign = await create(other_org, title="Foreign")
    for bad in (foreign["id"], deleted["id"], "q_01JD0000000000000000000000"):
        r = await org.post("/questions/reorder", json={"ids": [a["id"], bad]}, scope="write")
        assert r.status_code == 400
        assert error_code(await r.get_json()) == "validation_error"
        assert (await orders(org))[a["id"]] == 5
    r = await org.post("/questions/reorder", json={"ids": [a["id"], a["id"]]}, scope="write")
    assert r.status_code == 400 and error_code(await r.get_json()) == "validation_error"
    for body in ({"ids": []}, {"ids": ["x"] * 1001}, {"ids": [1]}, {}):
        r = await org.post("/questions/reorder", json=body, scope="write")
        assert r.status_code == 400
        err = await r.get_json()
        assert error_code(err) == "validation_failed" and fields(err) == {"ids"}


async def test_reorder_takes_a_thousand_ids(org):
    first = await create(org, title="First")
    ids = [first["id"]] + [f"q_01JD{i:022d}" for i in range(999)]
    r = await org.post("/questions/reorder", json={"ids": ids}, scope="write")
    # 1000 ids are accepted as a size; the unknown ones make it a validation_error.
    assert r.status_code == 400 and error_code(await r.get_json()) == "validation_error"


async def test_every_endpoint_refuses_another_orgs_question(engine, org, other_org):
    theirs = await create(other_org, title="Their question", slug="their-question")
    await other_org.patch(f"/questions/{theirs['id']}", json={"order": 1}, scope="write")
    r = await other_org.get(f"/questions/{theirs['id']}/revisions", scope="read")
    their_rev = (await r.get_json())["data"][0]["id"]
    mine = await create(org, title="My question")

    for ref in (theirs["id"], theirs["slug"]):
        calls = [
            org.get(f"/questions/{ref}", scope="read"),
            org.patch(f"/questions/{ref}", json={"title": "Hijack"}, scope="write"),
            org.delete(f"/questions/{ref}", scope="write"),
            org.get(f"/questions/{ref}/revisions", scope="read"),
            org.post(f"/questions/{ref}/revisions/{their_rev}/restore", scope="write"),
        ]
        for call in calls:
            r = await call
            assert r.status_code == 404
            assert error_code(await r.get_json()) == "question_not_found"
    r = await org.post(f"/questions/{mine['id']}/revisions/{their_rev}/restore", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "revision_not_found"
    r = await org.post("/questions/reorder", json={"ids": [theirs["id"]]}, scope="write")
    assert r.status_code == 400 and error_code(await r.get_json()) == "validation_error"
    r = await org.get("/questions", scope="read")
    assert [q["id"] for q in (await r.get_json())["data"]] == [mine["id"]]
    r = await org.get("/questions", query={"q": "their"}, scope="read")
    assert (await r.get_json())["data"] == []
    r = await org.post(
        "/questions",
        json={"title": "T", "answer": "A", "categoryId": theirs["categoryId"], "status": "draft"},
        scope="write",
    )
    assert r.status_code == 400 and error_code(await r.get_json()) == "category_not_found"
    # A key of one org cannot address the other org's URL at all.
    r = await org.client.get(f"/api/v1/{other_org.slug}/questions", headers=org.headers("admin"))
    assert r.status_code == 404 and error_code(await r.get_json()) == "org_not_found"
    # Theirs is untouched.
    r = await other_org.get(f"/questions/{theirs['id']}", scope="read")
    data = (await r.get_json())["data"]
    assert data["title"] == "Their question" and data["order"] == 1
    assert await question_events(engine, other_org, theirs["id"]) == [
        "question.created",
        "question.updated",
    ]
