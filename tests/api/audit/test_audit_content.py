"""The org's audit log for content (issue 17): every mutation of questions, their translations
and categories is one entry, written by the relay from the change's ``audit`` outbox event."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from tasks.publishing import publish_due_questions
from tenancy.audit import AUDIT_EVENT
from tenancy.db import tenant_session
from tenancy.outbox import OutboxEvent
from tenancy.transactions import commit
from tests.api.audit.conftest import relay, relayed_audit
from tests.api.questions.helpers import create, default_category
from tests.fixtures.orgs import OrgClient

PAST = "2020-01-01T00:00:00.000Z"
FR = {"title": "Comment réinitialiser mon mot de passe ?", "answer": "Utilisez le lien."}


async def entries(engine: AsyncEngine, org: OrgClient, **match: Any) -> list[dict[str, Any]]:
    """Relay the org's outbox (as the worker would), then the entries of ``GET /audit``
    matching ``match`` (entry fields), oldest first."""
    page = await relayed_audit(engine, org, limit=100)
    found = [{k: v for k, v in e.items() if k != "createdAt"} for e in reversed(page)]
    return [e for e in found if all(e[k] == v for k, v in match.items())]


async def one(engine: AsyncEngine, org: OrgClient, **match: Any) -> dict[str, Any]:
    found = await entries(engine, org, **match)
    assert len(found) == 1, found
    return found[0]


def by(org: OrgClient, scope: str) -> dict[str, str]:
    return {"type": "apiKey", "id": org.fingerprints[scope]}


async def get_question(org: OrgClient, ref: str) -> dict[str, Any]:
    r = await org.get(f"/questions/{ref}", scope="read")
    assert r.status_code == 200
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def test_question_create_update_delete_are_one_entry_each(
    engine: AsyncEngine, org: OrgClient
) -> None:
    q = await create(org, title="Audited")
    created = await one(engine, org, resource="question", resourceId=q["id"], action="created")
    assert created["actor"] == by(org, "write")
    assert created["before"] is None and created["after"] == q

    path = f"/questions/{q['id']}"
    r = await org.patch(path, json={"title": q["title"]}, scope="write")  # changes nothing
    assert r.status_code == 200
    assert await entries(engine, org, resourceId=q["id"], action="updated") == []
    r = await org.patch(path, json={"title": "Audited, changed", "status": "published"})
    assert r.status_code == 200
    after = (await r.get_json())["data"]
    updated = await one(engine, org, resourceId=q["id"], action="updated")
    assert updated["actor"] == by(org, "admin")
    assert updated["before"] == {"title": "Audited", "status": "draft", "publishedAt": None}
    assert updated["after"] == {
        "title": "Audited, changed",
        "status": "published",
        "publishedAt": after["publishedAt"],
    }

    r = await org.delete(path, scope="write")
    assert r.status_code == 204
    deleted = await one(engine, org, resourceId=q["id"], action="deleted")
    assert deleted["actor"] == by(org, "write")
    assert deleted["before"] == after and deleted["after"] is None
    assert len(await entries(engine, org, resource="question")) == 3


async def test_restore_is_one_entry_of_the_changed_fields(
    engine: AsyncEngine, org: OrgClient
) -> None:
    q = await create(org, title="Original")
    path = f"/questions/{q['id']}"
    await org.patch(path, json={"title": "Edited", "answer": "New answer"}, scope="write")
    r = await org.get(f"{path}/revisions", scope="read")
    first = (await r.get_json())["data"][-1]
    r = await org.post(f"{path}/revisions/{first['id']}/restore", scope="write")
    assert r.status_code == 200, await r.get_json()
    restored = await one(engine, org, resourceId=q["id"], action="restored")
    assert restored["actor"] == by(org, "write")
    assert restored["before"] == {"title": "Edited", "answer": "New answer"}
    assert restored["after"] == {"title": "Original", "answer": q["answer"]}


async def test_reorder_is_one_entry_of_the_changed_orders(
    engine: AsyncEngine, org: OrgClient
) -> None:
    a = await create(org, title="A", order=0)
    b = await create(org, title="B", order=5)
    r = await org.post("/questions/reorder", json={"ids": [a["id"], b["id"]]}, scope="write")
    assert r.status_code == 200, await r.get_json()
    reordered = await one(engine, org, resource="question", action="reordered")
    assert reordered["resourceId"] is None
    assert reordered["actor"] == by(org, "write")
    assert reordered["before"] == {b["id"]: 5} and reordered["after"] == {b["id"]: 1}
    # A reorder that changes nothing writes nothing.
    await org.post("/questions/reorder", json={"ids": [a["id"], b["id"]]}, scope="write")
    assert len(await entries(engine, org, action="reordered")) == 1
    assert await entries(engine, org, action="updated") == []


async def test_the_publish_sweep_is_one_entry_by_the_scheduler(
    engine: AsyncEngine, org: OrgClient
) -> None:
    due = await create(org, title="Due", scheduledPublishAt=PAST)
    await publish_due_questions(engine)
    published = await get_question(org, due["id"])
    entry = await one(engine, org, resourceId=due["id"], action="published")
    assert entry["actor"] == {"type": "system", "id": "scheduler"}
    assert entry["before"] == {
        "status": "scheduled",
        "publishedAt": None,
        "scheduledPublishAt": PAST,
    }
    assert entry["after"] == {
        "status": "published",
        "publishedAt": published["publishedAt"],
        "scheduledPublishAt": None,
    }
    assert await entries(engine, org, resourceId=due["id"], action="updated") == []


async def test_question_translations_are_entries_of_their_question(
    engine: AsyncEngine, org: OrgClient
) -> None:
    r = await org.patch("/settings", json={"locales": ["en", "fr"]})
    assert r.status_code == 200
    q = await create(org)
    path = f"/questions/{q['id']}/translations/fr"
    r = await org.request("PUT", path, json=FR, scope="write")
    assert r.status_code == 201, await r.get_json()
    first = (await r.get_json())["data"]
    r = await org.request("PUT", path, json={**FR, "title": "Mot de passe"}, scope="write")
    second = (await r.get_json())["data"]
    r = await org.delete(path, scope="write")
    assert r.status_code == 204
    updates = await entries(engine, org, resourceId=q["id"], action="translation_updated")
    assert [(e["resource"], e["before"], e["after"]) for e in updates] == [
        ("question", None, first),
        ("question", first, second),
    ]
    assert all(e["actor"] == by(org, "write") for e in updates)
    deleted = await one(engine, org, resourceId=q["id"], action="translation_deleted")
    assert deleted["resource"] == "question" and deleted["actor"] == by(org, "write")
    assert deleted["before"]["locale"] == "fr" and deleted["before"]["title"] == "Mot de passe"
    assert deleted["after"] is None


async def test_categories_and_their_translations_are_one_entry_each(
    engine: AsyncEngine, org: OrgClient
) -> None:
    r = await org.patch("/settings", json={"locales": ["en", "fr"]})
    assert r.status_code == 200
    r = await org.post("/categories", json={"name": "Billing", "order": 3}, scope="write")
    cat = (await r.get_json())["data"]
    r = await org.post("/categories", json={"name": "Other", "order": 4}, scope="write")
    other = (await r.get_json())["data"]
    await org.patch(f"/categories/{cat['id']}", json={"description": "Money"}, scope="write")
    r = await org.request(
        "PUT", f"/categories/{cat['id']}/translations/fr", json={"name": "Facturation"}
    )
    assert r.status_code == 201, await r.get_json()
    fr = (await r.get_json())["data"]
    await org.delete(f"/categories/{cat['id']}/translations/fr")
    await org.post("/categories/reorder", json={"ids": [cat["id"], other["id"]]}, scope="write")
    r = await org.post(
        "/categories/merge",
        json={"sourceId": other["id"], "targetId": cat["id"], "deleteSource": True},
    )
    assert r.status_code == 200, await r.get_json()
    found = await entries(engine, org, resource="category")
    assert [(e["action"], e["resourceId"]) for e in found] == [
        ("created", cat["id"]),
        ("created", other["id"]),
        ("updated", cat["id"]),
        ("translation_updated", cat["id"]),
        ("translation_deleted", cat["id"]),
        ("reordered", None),
        ("merged", other["id"]),
    ]
    assert found[2]["before"] == {"description": None}
    assert found[2]["after"] == {"description": "Money"}
    assert found[3]["before"] is None and found[3]["after"] == fr
    assert found[3]["actor"] == by(org, "admin")
    assert found[4]["before"] == fr and found[4]["after"] is None
    assert found[5]["before"] == {cat["id"]: 3, other["id"]: 4}
    assert found[5]["after"] == {cat["id"]: 0, other["id"]: 1}


async def test_an_idempotent_replay_writes_no_second_entry(
    engine: AsyncEngine, org: OrgClient
) -> None:
    body = {
        "title": "Once",
        "answer": "Only once.",
        "categoryId": await default_category(org),
        "status": "draft",
    }
    headers = {"X-Idempotency-Key": "audit-once"}
    for _ in range(2):
        r = await org.post("/questions", json=body, scope="write", headers=headers)
        assert r.status_code == 201
    assert len(await entries(engine, org, resource="question", action="created")) == 1


async def test_an_event_relayed_twice_is_one_entry(engine: AsyncEngine, org: OrgClient) -> None:
    q = await create(org, title="Twice")
    async with tenant_session(engine, org.info.schema_name) as session:
        (event,) = (
            await session.execute(
                select(OutboxEvent.event_id, OutboxEvent.event, OutboxEvent.data).where(
                    OutboxEvent.event == AUDIT_EVENT
                )
            )
        ).all()
    first = await one(engine, org, resourceId=q["id"], action="created")
    # The same event back in the outbox (a relay whose commit was not acknowledged): again.
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(
            insert(OutboxEvent).values(event_id=event.event_id, event=event.event, data=event.data)
        )
        await commit(session)
    assert await relay(engine, org) == 1
    assert await entries(engine, org, resourceId=q["id"]) == [first]


async def test_another_org_never_sees_the_entries(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    q = await create(org, title="Mine")
    await org.patch(f"/questions/{q['id']}", json={"title": "Still mine"}, scope="write")
    assert len(await entries(engine, org, resourceId=q["id"])) == 2
    assert await entries(engine, other_org, resource="question") == []
    r = await other_org.patch(f"/questions/{q['id']}", json={"title": "Theirs"}, scope="write")
    assert r.status_code == 404
    assert await entries(engine, other_org) == []
    assert len(await entries(engine, org, resourceId=q["id"])) == 2
