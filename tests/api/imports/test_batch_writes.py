"""New questions of an import are written a batch at a time: what each one gets is what a
create of its own gives it (automatic slugs suffixed past the taken ones, search words, the
audit entry, the plan's cap exact to the item), and another org is untouched."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tenancy.db import tenant_session
from tests.api.imports.helpers import all_categories, all_questions, count_rows, run
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


def rows(count: int, start: int = 0, title: str | None = None) -> bytes:
    lines = ["externalId,title,answer,status"]
    for n in range(start, start + count):
        name = title or f"Question number {n}"
        lines.append(f"ext-{n},{name},Answer {n} mentions zeppelins,published")
    return ("\n".join(lines) + "\n").encode()


async def test_automatic_slugs_search_and_audit_match_single_creates(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    category = (await all_categories(org))[0]["id"]
    r = await org.post(
        "/questions",
        json={"title": "Reset password", "answer": "a", "categoryId": category, "status": "draft"},
    )
    assert r.status_code == 201 and (await r.get_json())["data"]["slug"] == "reset-password"
    job = await run(engine, org, "csv", rows(3, title="Reset password"))
    assert job["counts"] == {"created": 3, "updated": 0, "unchanged": 0, "failed": 0}, job
    slugs = sorted(q["slug"] for q in await all_questions(org))
    assert slugs == ["reset-password", "reset-password-2", "reset-password-3", "reset-password-4"]

    r = await org.get("/questions", query={"q": "zeppelins"})
    assert r.status_code == 200
    assert len((await r.get_json())["data"]) == 3
    async with tenant_session(engine, org.info.schema_name) as session:
        audits = (
            await session.execute(
                text(
                    "SELECT data->>'action' AS action, data->'actor'->>'type' AS actor "
                    "FROM outbox WHERE event = 'audit' AND data->>'action' = 'created' "
                    "AND data->>'resource' = 'question'"
                )
            )
        ).all()
    assert len(audits) == 4 and {a.actor for a in audits} == {"apiKey"}
    assert await all_questions(other_org) == []


async def test_the_cap_holds_to_the_item_within_a_batch(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await org_factory(Plan.FREE)  # 200 questions at most
    first = await run(engine, org, "csv", rows(150))
    assert first["counts"]["created"] == 150, first
    second = await run(engine, org, "csv", rows(60, start=150))
    assert second["counts"] == {"created": 50, "updated": 0, "unchanged": 0, "failed": 10}
    assert {(e["field"], e["issue"].split(":")[0]) for e in second["errors"]} == {
        ("item", "plan_limit_reached")
    }
    assert sorted(e["item"] for e in second["errors"]) == sorted(
        f"ext-{n}" for n in range(200, 210)
    )
    assert await count_rows(engine, org, "questions") == 200
