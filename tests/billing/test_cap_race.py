"""The question cap under concurrent creates (issue 14): an org one below its cap and many
creates at once: exactly one is created, the others are refused with 402."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.questions.models import Question
from billing.plans import Plan, cap_of
from tenancy.db import tenant_session
from tests.api.questions.helpers import default_category, error_code
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def live_questions(engine: AsyncEngine, org: OrgClient) -> int:
    async with tenant_session(engine, org.info.schema_name) as session:
        stmt = select(func.count()).where(Question.deleted_at.is_(None))
        count: int = (await session.execute(stmt)).scalar_one()
        return count


async def test_concurrent_creates_at_one_below_the_cap_create_exactly_one(
    engine: AsyncEngine, org_factory: OrgFactory
) -> None:
    org = await org_factory(Plan.FREE)
    cap = cap_of(Plan.FREE, "questions")
    assert cap is not None
    category = await default_category(org)
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            text(
                "INSERT INTO questions (id, slug, locale, title, answer, status, category_id,"
                " sort_order, search_vector, revision_count, created_at, updated_at)"
                " SELECT 'q_seed' || n, 'seed-' || n, 'en', 'Seed ' || n, 'A', 'draft', :cat,"
                " 0, to_tsvector('simple', 'seed'), 0, now(), now()"
                " FROM generate_series(1, :n) AS n"
            ),
            {"cat": category, "n": cap - 1},
        )
    assert await live_questions(engine, org) == cap - 1
    for round_ in range(2):
        results = await asyncio.gather(
            *(
                org.post(
                    "/questions",
                    json={
                        "title": f"Race {round_}-{i}",
                        "answer": "A",
                        "categoryId": category,
                        "status": "draft",
                    },
                    scope="write",
                )
                for i in range(8)
            )
        )
        codes = sorted(r.status_code for r in results)
        assert codes == [201] + [402] * 7
        for r in results:
            if r.status_code == 402:
                assert error_code(await r.get_json()) == "plan_limit_reached"
        assert await live_questions(engine, org) == cap
        # Room for one again: a soft delete frees it.
        winner = next(r for r in results if r.status_code == 201)
        qid = (await winner.get_json())["data"]["id"]
        assert (await org.delete(f"/questions/{qid}", scope="write")).status_code == 204
