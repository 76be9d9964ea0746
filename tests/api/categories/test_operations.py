"""Merge, reorder, forced delete, the audit log, events and the plan cap of categories."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.questions.models import Question
from api.search import weighted_vector
from billing.plans import Plan
from tenancy.audit import AUDIT_EVENT
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tenancy.ids import new_id
from tenancy.outbox import OutboxEvent
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def create(org: OrgClient, **body: object) -> dict:
    r = await org.post("/categories", json=body, scope="write")
    assert r.status_code == 201, await r.get_json()
    return (await r.get_json())["data"]


async def get(org: OrgClient, ref: str) -> dict:
    r = await org.get(f"/categories/{ref}")
    assert r.status_code == 200
    return (await r.get_json())["data"]


async def add_questions(engine: AsyncEngine, org: OrgClient, category_id: str, n: int) -> list[str]:
    """Questions written straight to the org's schema (the Questions API has its own tests)."""
    ids = []
    now = utcnow()
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        for i in range(n):
            qid = new_id("q")
            ids.append(qid)
            await session.execute(
                Question.__table__.insert().values(
                    id=qid,
                    slug=f"q-{qid.lower()}",
                    title=f"Question {i}",
                    answer="Answer",
                    status="draft",
                    category_id=category_id,
                    sort_order=0,
                    search_vector=weighted_vector(f"Question {i}", "Answer"),
                    created_at=now,
                    updated_at=now,
                )
            )
    return ids


async def events_of(engine: AsyncEngine, org: OrgClient) -> list[tuple[str, dict[str, Any]]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(
            select(OutboxEvent.event, OutboxEvent.data)
            .where(OutboxEvent.event != AUDIT_EVENT)  # the audit log's, never delivered
            .order_by(OutboxEvent.id)
        )
        return [(r.event, r.data) for r in rows]


async def test_question_count_and_plain_delete_refused_when_not_empty(
    org: OrgClient, engine: AsyncEngine
) -> None:
    cat = await create(org, name="Busy")
    await add_questions(engine, org, cat["id"], 3)
    assert (await get(org, cat["id"]))["questionCount"] == 3
    r = await org.delete(f"/categories/{cat['id']}", scope="write")
    assert r.status_code == 409
    assert (await r.get_json())["error"]["code"] == "category_not_empty"
    assert (await get(org, cat["id"]))["questionCount"] == 3


async def test_forced_delete_moves_questions_to_default(
    org: OrgClient, engine: AsyncEngine
) -> None:
    cat = await create(org, name="Doomed")
    default = await get(org, "uncategorized")
    qids = await add_questions(engine, org, cat["id"], 2)
    r = await org.delete(f"/categories/{cat['id']}", scope="write", query={"force": "true"})
    assert r.status_code == 204
    assert (await get(org, "uncategorized"))["questionCount"] == default["questionCount"] + 2
    async with tenant_session(engine, org.info.schema_name) as session:
        owners = set(
            (
                await session.execute(select(Question.category_id).where(Question.id.in_(qids)))
            ).scalars()
        )
    assert owners == {default["id"]}
    events = await events_of(engine, org)
    moved = [d for e, d in events if e == "question.updated"]
    assert {d["id"] for d in moved} == set(qids)
    assert all(d["categoryId"] == default["id"] for d in moved)
    deleted = [d for e, d in events if e == "category.deleted"]
    assert deleted == [{**cat, "questionCount": 2}]


async def test_merge_moves_children_and_questions_and_soft_deletes(
    org: OrgClient, engine: AsyncEngine
) -> None:
    source = await create(org, name="Source")
    target = await create(org, name="Target")
    kids = [await create(org, name=f"Kid {i}", parentId=source["id"]) for i in range(2)]
    await add_questions(engine, org, source["id"], 3)
    r = await org.post(
        "/categories/merge",
        json={"sourceId": source["id"], "targetId": target["id"], "deleteSource": True},
    )
    assert r.status_code == 200
    assert (await r.get_json())["data"] == {
        "childrenMoved": 2,
        "questionsMoved": 3,
        "sourceDeleted": True,
    }
    assert (await get(org, target["id"]))["questionCount"] == 3
    for kid in kids:
        assert (await get(org, kid["id"]))["parentId"] == target["id"]
    assert (await org.get(f"/categories/{source['id']}")).status_code == 404
    # A soft-deleted category's slug is free again.
    assert (await create(org, name="Source"))["slug"] == "source"
    events = [e for e, _ in await events_of(engine, org)]
    assert events.count("category.deleted") == 1
    assert events.count("question.updated") == 3


async def test_merge_keeps_source_without_delete_source(org: OrgClient) -> None:
    source = await create(org, name="Keep")
    target = await create(org, name="Into")
    r = await org.post(
        "/categories/merge", json={"sourceId": source["id"], "targetId": target["id"]}
    )
    assert (await r.get_json())["data"] == {
        "childrenMoved": 0,
        "questionsMoved": 0,
        "sourceDeleted": False,
    }
    assert (await org.get(f"/categories/{source['id']}")).status_code == 200


async def test_merge_errors(org: OrgClient) -> None:
    a = await create(org, name="A")
    child = await create(org, name="A child", parentId=a["id"])
    default = await get(org, "uncategorized")
    cases = [
        ({"sourceId": a["id"], "targetId": a["id"]}, 400, "validation_failed"),
        ({"sourceId": a["id"], "targetId": child["id"]}, 400, "validation_failed"),
        ({"sourceId": default["id"], "targetId": a["id"]}, 409, "default_category_protected"),
        (
            {"sourceId": "cat_01JD0000000000000000000000", "targetId": a["id"]},
            404,
            "category_not_found",
        ),
        (
            {"sourceId": a["id"], "targetId": "cat_01JD0000000000000000000000"},
            404,
            "category_not_found",
        ),
        ({"sourceId": "x" * 300, "targetId": a["id"]}, 404, "category_not_found"),
        ({"sourceId": a["id"]}, 400, "validation_failed"),
        ({"sourceId": a["id"], "targetId": 5}, 400, "validation_failed"),
    ]
    for body, status, code in cases:
        r = await org.post("/categories/merge", json=body)
        assert r.status_code == status, body
        assert (await r.get_json())["error"]["code"] == code, body
    assert (await get(org, child["id"]))["parentId"] == a["id"]


async def test_merge_requires_admin(org: OrgClient) -> None:
    a = await create(org, name="A")
    b = await create(org, name="B")
    r = await org.post(
        "/categories/merge", json={"sourceId": a["id"], "targetId": b["id"]}, scope="write"
    )
    assert r.status_code == 403
    assert (await r.get_json())["error"]["code"] == "insufficient_scope"


async def test_reorder_assigns_positions_and_keeps_others(org: OrgClient) -> None:
    cats = [await create(org, name=f"R{i}", order=50 + i) for i in range(4)]
    ids = [cats[2]["id"], cats[0]["id"], cats[1]["id"]]
    r = await org.post("/categories/reorder", json={"ids": ids}, scope="write")
    assert r.status_code == 200
    assert (await r.get_json())["data"] == {"updated": 3}
    assert [(await get(org, i))["order"] for i in ids] == [0, 1, 2]
    assert (await get(org, cats[3]["id"]))["order"] == 53


async def test_reorder_rejects_foreign_unknown_and_duplicate_ids_atomically(
    org: OrgClient, other_org: OrgClient
) -> None:
    mine = await create(org, name="Mine", order=9)
    theirs = await create(other_org, name="Theirs", order=9)
    for ids in (
        [mine["id"], theirs["id"]],
        [mine["id"], "cat_01JD0000000000000000000000"],
        [mine["id"], "x" * 300],  # a string naming no category, however long
        [mine["id"], mine["id"]],
    ):
        r = await org.post("/categories/reorder", json={"ids": ids}, scope="write")
        assert r.status_code == 400
        assert (await r.get_json())["error"]["code"] == "validation_error"
    assert (await get(org, mine["id"]))["order"] == 9
    assert (await get(other_org, theirs["id"]))["order"] == 9


async def test_reorder_list_shape_errors(org: OrgClient) -> None:
    for body in ({"ids": []}, {"ids": ["x"] * 1001}, {"ids": [1, 2]}, {"ids": "cat_1"}, {}):
        r = await org.post("/categories/reorder", json=body, scope="write")
        assert r.status_code == 400
        err = (await r.get_json())["error"]
        assert err["code"] == "validation_failed"
        assert err["details"][0]["field"] == "ids"


async def test_audit_log_records_each_mutation(org: OrgClient) -> None:
    cat = await create(org, name="Audited")
    await org.patch(f"/categories/{cat['id']}", json={"name": "Audited 2", "order": 4})
    other = await create(org, name="Other")
    await org.post("/categories/reorder", json={"ids": [other["id"], cat["id"]]})
    await org.post("/categories/merge", json={"sourceId": other["id"], "targetId": cat["id"]})
    await org.delete(f"/categories/{other['id']}")
    r = await org.get("/categories/audit")
    assert r.status_code == 200
    entries = (await r.get_json())["data"]
    actions = [e["action"] for e in entries]
    assert actions == ["deleted", "merged", "reordered", "created", "updated", "created"]
    actor = {"type": "apiKey", "id": org.fingerprints["write"]}
    assert entries[-1]["actor"] == actor
    assert entries[0]["actor"] == {"type": "apiKey", "id": org.fingerprints["admin"]}
    created = entries[-1]
    assert created["before"] is None and created["after"]["name"] == "Audited"
    updated = entries[-2]
    assert updated["categoryId"] == cat["id"]
    assert updated["before"] == {"name": "Audited", "order": 0}
    assert updated["after"] == {"name": "Audited 2", "order": 4}
    reordered = entries[2]
    # Only the categories whose order changed: `other` was at 0 already.
    assert reordered["categoryId"] is None
    assert reordered["before"] == {cat["id"]: 4}
    assert reordered["after"] == {cat["id"]: 1}
    assert entries[0]["before"]["id"] == other["id"] and entries[0]["after"] is None
    assert set(entries[0]) == {
        "id",
        "action",
        "categoryId",
        "actor",
        "before",
        "after",
        "createdAt",
    }
    assert entries[0]["id"].startswith("aud_")


async def test_audit_requires_admin_and_keeps_100(org: OrgClient) -> None:
    assert (await org.get("/categories/audit", scope="write")).status_code == 403
    cat = await create(org, name="Many")
    for i in range(101):
        r = await org.patch(f"/categories/{cat['id']}", json={"order": i + 1}, scope="write")
        assert r.status_code == 200
    entries = (await (await org.get("/categories/audit")).get_json())["data"]
    assert len(entries) == 100
    assert entries[0]["after"] == {"order": 101}


async def test_noop_patch_writes_no_audit_and_no_event(org: OrgClient, engine: AsyncEngine) -> None:
    cat = await create(org, name="Same")
    before = await events_of(engine, org)
    r = await org.patch(f"/categories/{cat['id']}", json={"name": "Same"}, scope="write")
    assert (await r.get_json())["data"] == cat
    assert await events_of(engine, org) == before
    entries = (await (await org.get("/categories/audit")).get_json())["data"]
    assert [e["action"] for e in entries] == ["created"]


async def test_events_carry_the_resource_as_get_returns_it(
    org: OrgClient, engine: AsyncEngine
) -> None:
    cat = await create(org, name="Evented")
    r = await org.patch(f"/categories/{cat['id']}", json={"description": "new"}, scope="write")
    updated = (await r.get_json())["data"]
    await org.delete(f"/categories/{cat['id']}", scope="write")
    events = await events_of(engine, org)
    assert events == [
        ("category.created", cat),
        ("category.updated", updated),
        ("category.deleted", updated),
    ]


async def test_reorder_emits_updated_for_changed_categories_only(
    org: OrgClient, engine: AsyncEngine
) -> None:
    a = await create(org, name="A", order=0)
    b = await create(org, name="B", order=5)
    before = len(await events_of(engine, org))
    await org.post("/categories/reorder", json={"ids": [a["id"], b["id"]]}, scope="write")
    new = (await events_of(engine, org))[before:]
    assert [(e, d["id"], d["order"]) for e, d in new] == [("category.updated", b["id"], 1)]


async def test_failed_request_writes_nothing(org: OrgClient, engine: AsyncEngine) -> None:
    await create(org, name="Exists", slug="exists")
    before = await events_of(engine, org)
    r = await org.post("/categories", json={"name": "Dup", "slug": "exists"}, scope="write")
    assert r.status_code == 409
    assert await events_of(engine, org) == before
    entries = (await (await org.get("/categories/audit")).get_json())["data"]
    assert len(entries) == 1


async def test_category_cap_of_the_plan(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.FREE)
    for i in range(9):  # the default category counts: FREE allows 10
        await create(org, name=f"Cap {i}")
    r = await org.post("/categories", json={"name": "One too many"}, scope="write")
    assert r.status_code == 402
    assert (await r.get_json())["error"]["code"] == "plan_limit_reached"


async def test_category_cap_holds_under_concurrent_creates(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.FREE)
    for i in range(5):
        await create(org, name=f"Pre {i}")
    results = await asyncio.gather(
        *(org.post("/categories", json={"name": f"Race {i}"}, scope="write") for i in range(12))
    )
    statuses = sorted(r.status_code for r in results)
    assert statuses.count(201) == 4
    assert statuses.count(402) == 8
    body = await (await org.get("/categories", query={"limit": 100})).get_json()
    assert len(body["data"]) == 10


async def test_concurrent_auto_slugs_are_all_distinct(org: OrgClient) -> None:
    results = await asyncio.gather(
        *(org.post("/categories", json={"name": "Popular"}, scope="write") for _ in range(8))
    )
    assert all(r.status_code == 201 for r in results)
    slugs = {(await r.get_json())["data"]["slug"] for r in results}
    assert slugs == {"popular", *(f"popular-{i}" for i in range(2, 9))}


async def test_moved_questions_get_a_revision(org: OrgClient) -> None:
    source = await create(org, name="From")
    target = await create(org, name="To")
    r = await org.post(
        "/questions",
        json={"title": "Moved?", "answer": "Yes", "categoryId": source["id"], "status": "draft"},
        scope="write",
    )
    assert r.status_code == 201
    question = (await r.get_json())["data"]
    r = await org.post(
        "/categories/merge", json={"sourceId": source["id"], "targetId": target["id"]}
    )
    assert (await r.get_json())["data"]["questionsMoved"] == 1
    revisions = (await (await org.get(f"/questions/{question['id']}/revisions")).get_json())["data"]
    assert len(revisions) == 1
    assert revisions[0]["changedFields"] == ["categoryId"]
    assert revisions[0]["snapshot"]["categoryId"] == source["id"]
    assert revisions[0]["actor"] == {"type": "apiKey", "id": org.fingerprints["admin"]}
    r = await org.get(f"/questions/{question['id']}")
    assert (await r.get_json())["data"]["categoryId"] == target["id"]
