"""Creates of one org do not queue behind each other (issue 14): a create does not wait for
another transaction that only needs its category to stay (a create, a PATCH moving a question
into it), the cap's lock is held only from the count to COMMIT, and slugs stay unique when
creates of the same title race."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from api.questions.rules import category_id as lock_category
from tenancy.db import tenant_session
from tests.api.questions.helpers import create, default_category, error_code
from tests.api.questions.test_round_trips import RoundTrips, round_trips, settle
from tests.fixtures.orgs import OrgClient

__all__ = ["round_trips"]


async def test_a_create_does_not_wait_for_a_transaction_keeping_its_category(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """Another transaction holds the category as a create or a PATCH into it does
    (``rules.category_id``): a create in that category goes through meanwhile."""
    category = await default_category(org)
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.begin()
        await lock_category(session, category)
        body = {"title": "Not queued", "answer": "A", "categoryId": category, "status": "draft"}
        task = asyncio.ensure_future(org.post("/questions", json=body, scope="write"))
        done, _ = await asyncio.wait({task}, timeout=5)
        await session.rollback()
    r = await task
    assert done, "the create waited for another transaction holding its category"
    assert r.status_code == 201, await r.get_json()


async def test_the_cap_lock_is_held_only_from_the_count_to_commit(
    org: OrgClient, round_trips: RoundTrips
) -> None:
    """A capped org (STARTER): the cap's lock comes after the question's insert, so creates
    of the org queue only for the count and the COMMIT (not for the whole transaction)."""
    category = await default_category(org)
    await create(org, category, title="Warm-up create")
    await settle(round_trips)
    del round_trips.sent[:]
    await create(org, category, title="Counted create")
    sent = list(round_trips.sent)
    lock = next(i for i, s in enumerate(sent) if "pg_advisory_xact_lock" in s)
    insert = next(i for i, s in enumerate(sent) if "INSERT INTO __tenant__.questions" in s)
    commit = next(i for i, s in enumerate(sent) if s.strip().rstrip(";").upper() == "COMMIT")
    assert insert < lock, sent
    assert commit - lock <= 2, sent  # the lock, the count, COMMIT


async def test_concurrent_creates_with_one_title_get_distinct_slugs(org: OrgClient) -> None:
    category = await default_category(org)
    body = {"title": "Same title", "answer": "A", "categoryId": category, "status": "draft"}
    results = await asyncio.gather(
        *(org.post("/questions", json=body, scope="write") for _ in range(8))
    )
    assert [r.status_code for r in results] == [201] * 8
    slugs = [(await r.get_json())["data"]["slug"] for r in results]
    assert len(set(slugs)) == 8 and "same-title" in slugs
    manual = {**body, "slug": "contested-slug"}
    results = await asyncio.gather(
        *(org.post("/questions", json=manual, scope="write") for _ in range(6))
    )
    codes = sorted(r.status_code for r in results)
    assert codes == [201] + [409] * 5
    for r in results:
        if r.status_code == 409:
            assert error_code(await r.get_json()) == "slug_conflict"
    listed = await (await org.get("/questions", query={"limit": 100})).get_json()
    live = [q["slug"] for q in listed["data"]]
    assert len(live) == len(set(live)) == 9
