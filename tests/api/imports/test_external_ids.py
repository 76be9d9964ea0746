"""``externalId`` readable (issue 29): an imported question and category show their source on
every read (GET by id and slug, the lists built in SQL and in Core, searches, filters, the
cached reads); what the API made shows null; writes and events carry it as GET does (the
import's own per-question events too); another org never sees it."""

from __future__ import annotations

from typing import Any

from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import tenant_session
from tests.api.imports.helpers import all_categories, all_questions, fixture, run
from tests.api.test_cache_generations import cached_read
from tests.fixtures.orgs import OrgClient

ZENDESK = fixture("zendesk.json")
PAY = "zendesk:360012345"
PAYMENTS = "zendesk:section:360002000002"


def by_source(items: list[dict[str, Any]], source: str | None) -> dict[str, Any]:
    return next(i for i in items if i["externalId"] == source)


async def data(org: OrgClient, path: str, **query: Any) -> Any:
    r = await org.get(path, query=query or None)
    assert r.status_code == 200, await r.get_data()
    return (await r.get_json())["data"]


async def last_event(engine: AsyncEngine, org: OrgClient, event: str) -> dict[str, Any]:
    async with tenant_session(engine, org.info.schema_name) as session:
        row = await session.execute(
            text("SELECT data FROM outbox WHERE event = :e ORDER BY id DESC LIMIT 1"), {"e": event}
        )
        found: dict[str, Any] = row.scalar_one()
        return found


async def test_imported_questions_show_their_source_on_every_read(
    app: Quart, org: OrgClient, engine: AsyncEngine
) -> None:
    job = await run(engine, org, "zendesk", ZENDESK)
    assert job["status"] == "succeeded", job
    listed = await all_questions(org)  # the plain list: its JSON built in PostgreSQL
    assert sorted(q["externalId"] for q in listed) == [PAY, "zendesk:360012346"]
    pay = by_source(listed, PAY)
    assert pay["title"] == "How do I pay?"
    assert await data(org, f"/questions/{pay['id']}") == pay
    assert await data(org, f"/questions/{pay['slug']}") == pay
    assert (await cached_read(app, org, f"/questions/{pay['id']}"))["data"] == pay
    # The lists built in Core: the filter, a search, a category, a status.
    assert await data(org, "/questions", externalId=PAY) == [pay]
    assert await data(org, "/questions", q="pay") == [pay]
    assert pay in await data(org, "/questions", category=pay["categoryId"])
    assert pay in await data(org, "/questions", status="published", limit=100)
    assert await data(org, "/questions", externalId="zendesk:1") == []


async def test_imported_categories_show_their_source_and_their_events_carry_it(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await run(engine, org, "zendesk", ZENDESK)
    categories = await all_categories(org)
    assert sorted(c["externalId"] or "" for c in categories) == [
        "",  # the default category: made by the service
        "zendesk:category:360001000001",
        PAYMENTS,
        "zendesk:section:360002000003",
    ]
    payments = by_source(categories, PAYMENTS)
    assert payments["name"] == "Payments"
    assert await data(org, f"/categories/{payments['id']}") == payments
    assert await data(org, f"/categories/{payments['slug']}") == payments
    assert await data(org, "/categories", externalId=PAYMENTS) == [payments]
    assert payments in await data(org, "/categories", q="payments")

    r = await org.patch(f"/categories/{payments['id']}", json={"name": "Paying"})
    assert r.status_code == 200
    updated = (await r.get_json())["data"]
    assert updated["externalId"] == PAYMENTS and updated["name"] == "Paying"
    assert await data(org, f"/categories/{payments['id']}") == updated
    assert await last_event(engine, org, "category.updated") == updated


async def test_question_writes_and_events_carry_the_source(
    org: OrgClient, engine: AsyncEngine
) -> None:
    job = await run(engine, org, "zendesk", ZENDESK, perQuestionEvents="true")
    assert job["status"] == "succeeded", job
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(
            text(
                "SELECT event, data FROM outbox WHERE event IN ('question.created',"
                " 'category.created') ORDER BY id"
            )
        )
        created = [(event, payload["externalId"]) for event, payload in rows.all()]
    assert ("question.created", PAY) in created and ("category.created", PAYMENTS) in created
    assert all(source is not None for _, source in created), created
    pay = by_source(await all_questions(org), PAY)
    assert (await last_event(engine, org, "question.created"))["externalId"] is not None

    r = await org.patch(f"/questions/{pay['id']}", json={"title": "How do I pay by card?"})
    assert r.status_code == 200
    updated = (await r.get_json())["data"]
    assert updated["externalId"] == PAY and updated["title"] == "How do I pay by card?"
    assert await data(org, f"/questions/{pay['id']}") == {**updated, "draft": None}
    assert await last_event(engine, org, "question.updated") == updated
    r = await org.post("/questions/reorder", json={"ids": [pay["id"]]})
    assert r.status_code == 200, await r.get_data()
    r = await org.patch(f"/questions/{pay['id']}", json={"status": "archived"})
    assert (await r.get_json())["data"]["externalId"] == PAY
    assert (await last_event(engine, org, "question.unpublished"))["externalId"] == PAY

    # Re-imported: the updates' events carry it too.
    again = await run(engine, org, "zendesk", ZENDESK, perQuestionEvents="true")
    assert again["counts"]["updated"] >= 1, (again["counts"], again["errors"])
    assert (await last_event(engine, org, "question.updated"))["externalId"] == PAY


async def test_what_the_api_makes_shows_null(org: OrgClient, engine: AsyncEngine) -> None:
    r = await org.post("/categories", json={"name": "Made here"})
    assert r.status_code == 201
    category = (await r.get_json())["data"]
    assert category["externalId"] is None
    assert await data(org, f"/categories/{category['id']}") == category
    assert await last_event(engine, org, "category.created") == category
    r = await org.post(
        "/questions",
        json={"title": "Made here", "answer": "a", "categoryId": category["id"], "status": "draft"},
    )
    assert r.status_code == 201
    question = (await r.get_json())["data"]
    assert question["externalId"] is None
    assert await last_event(engine, org, "question.created") == question
    got = await data(org, f"/questions/{question['id']}")
    assert got == {**question, "draft": None}
    assert await all_questions(org) == [got]


async def test_another_org_never_sees_the_source(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    await run(engine, org, "zendesk", ZENDESK)
    pay = by_source(await all_questions(org), PAY)
    payments = by_source(await all_categories(org), PAYMENTS)
    assert await data(other_org, "/questions", externalId=PAY) == []
    assert await data(other_org, "/categories", externalId=PAYMENTS) == []
    for path in (f"/questions/{pay['id']}", f"/categories/{payments['id']}"):
        r = await other_org.get(path)
        assert r.status_code == 404
    assert [q["externalId"] for q in await all_questions(other_org)] == []
    assert [c["externalId"] for c in await all_categories(other_org)] == [None]

    # The same source imported by the other org names its own question, not the first's.
    await run(engine, other_org, "zendesk", ZENDESK)
    [theirs] = await data(other_org, "/questions", externalId=PAY)
    assert theirs["id"] != pay["id"] and theirs["externalId"] == PAY
    assert await data(org, "/questions", externalId=PAY) == [pay]
