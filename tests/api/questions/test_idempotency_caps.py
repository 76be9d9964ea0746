"""X-Idempotency-Key on create (Stripe's semantics, safe under races) and the question cap."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select, update

from api.questions.models import IdempotencyKey, Question
from billing.plans import Plan
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tests.api.questions.helpers import create, default_category, error_code, fields


async def body_for(org, **extra):
    return {
        "title": "Idempotent question",
        "answer": "Once.",
        "categoryId": await default_category(org),
        "status": "published",
        **extra,
    }


async def post(org, body, key):
    return await org.post(
        "/questions", json=body, scope="write", headers={"X-Idempotency-Key": key}
    )


async def count_questions(engine, org):
    async with tenant_session(engine, org.info.schema_name) as session:
        return (await session.execute(select(func.count()).select_from(Question))).scalar_one()


async def test_same_key_same_body_replays_the_first_response(engine, org):
    body = await body_for(org)
    first = await post(org, body, "key-1")
    assert first.status_code == 201
    assert "Idempotent-Replayed" not in first.headers
    second = await post(org, dict(reversed(list(body.items()))), "key-1")
    assert second.status_code == 201
    assert second.headers["Idempotent-Replayed"] == "true"
    assert await second.get_data() == await first.get_data()
    assert await count_questions(engine, org) == 1
    # The replay is the stored first response, even after the question changed.
    qid = (await first.get_json())["data"]["id"]
    await org.patch(f"/questions/{qid}", json={"title": "Changed"}, scope="write")
    third = await post(org, body, "key-1")
    assert (await third.get_json())["data"]["title"] == "Idempotent question"
    # Another key is another create.
    other = await post(org, body, "key-2")
    assert other.status_code == 201
    assert (await other.get_json())["data"]["id"] != qid


async def test_one_instant_in_another_offset_is_the_same_body(org):
    body = await body_for(org, status="draft", scheduledPublishAt="2030-01-01T08:00:00Z")
    first = await post(org, body, "key-at")
    assert first.status_code == 201
    same = {**body, "scheduledPublishAt": "2030-01-01T10:00:00+02:00"}
    second = await post(org, same, "key-at")
    assert second.status_code == 201 and second.headers["Idempotent-Replayed"] == "true"
    later = {**body, "scheduledPublishAt": "2030-01-01T10:00:00Z"}
    r = await post(org, later, "key-at")
    assert r.status_code == 422 and error_code(await r.get_json()) == "idempotency_key_reused"


async def test_same_key_other_body_is_422(org):
    body = await body_for(org)
    assert (await post(org, body, "k")).status_code == 201
    r = await post(org, {**body, "answer": "Twice."}, "k")
    assert r.status_code == 422
    assert error_code(await r.get_json()) == "idempotency_key_reused"


async def test_keys_are_scoped_to_the_org(org, other_org):
    a = await post(org, await body_for(org), "shared-key")
    b = await post(other_org, await body_for(other_org), "shared-key")
    assert a.status_code == b.status_code == 201
    assert "Idempotent-Replayed" not in b.headers
    assert (await a.get_json())["data"]["id"] != (await b.get_json())["data"]["id"]


async def test_key_length_is_checked(org):
    body = await body_for(org)
    for key in ("", "k" * 256):
        r = await post(org, body, key)
        assert r.status_code == 400
        err = await r.get_json()
        assert error_code(err) == "validation_failed"
        assert fields(err) == {"X-Idempotency-Key"}
    assert (await post(org, body, "k" * 255)).status_code == 201


async def test_only_successful_responses_are_kept(org):
    body = await body_for(org, categoryId="cat_01JD0000000000000000000000")
    r = await post(org, body, "retry-me")
    assert r.status_code == 400
    fixed = await body_for(org)
    r = await post(org, fixed, "retry-me")
    assert r.status_code == 201 and "Idempotent-Replayed" not in r.headers


async def test_ten_concurrent_creates_with_one_key(engine, org):
    body = await body_for(org)
    responses = await asyncio.gather(*(post(org, body, "race") for _ in range(10)))
    assert [r.status_code for r in responses] == [201] * 10
    bodies = [await r.get_data() for r in responses]
    assert all(b == bodies[0] for b in bodies)  # the same bytes, not only the same JSON
    replayed = [r.headers.get("Idempotent-Replayed") for r in responses]
    assert replayed.count("true") == 9 and replayed.count(None) == 1
    assert await count_questions(engine, org) == 1


async def test_a_key_older_than_24_hours_is_absent(engine, org):
    body = await body_for(org)
    first = await post(org, body, "old-key")
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.key == "old-key")
            .values(created_at=utcnow().replace(year=2000))
        )
    again = await post(org, {**body, "answer": "Another body"}, "old-key")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    assert (await again.get_json())["data"]["id"] != (await first.get_json())["data"]["id"]
    replay = await post(org, {**body, "answer": "Another body"}, "old-key")
    assert replay.headers["Idempotent-Replayed"] == "true"


async def test_the_question_cap_holds_under_concurrent_creates(engine, org_factory):
    org = await org_factory(Plan.FREE)
    category_id = await default_category(org)
    for chunk in range(13):
        made = await asyncio.gather(
            *(
                org.post(
                    "/questions",
                    json={
                        "title": f"Q {chunk}-{i}",
                        "answer": "A",
                        "categoryId": category_id,
                        "status": "draft",
                    },
                    scope="write",
                )
                for i in range(15)
            )
        )
        assert all(r.status_code == 201 for r in made)
    assert await count_questions(engine, org) == 195
    results = await asyncio.gather(
        *(
            org.post(
                "/questions",
                json={
                    "title": f"Race {i}",
                    "answer": "A",
                    "categoryId": category_id,
                    "status": "draft",
                },
                scope="write",
            )
            for i in range(10)
        )
    )
    codes = sorted(r.status_code for r in results)
    assert codes == [201] * 5 + [402] * 5
    refused = next(r for r in results if r.status_code == 402)
    assert error_code(await refused.get_json()) == "plan_limit_reached"
    assert await count_questions(engine, org) == 200
    # Soft-deleted questions do not count.
    ok = next(r for r in results if r.status_code == 201)
    qid = (await ok.get_json())["data"]["id"]
    assert (await org.delete(f"/questions/{qid}", scope="write")).status_code == 204
    again = await create(org, category_id, title="Room again")
    assert again["id"]
    r = await org.post(
        "/questions",
        json={"title": "One too many", "answer": "A", "categoryId": category_id, "status": "draft"},
        scope="write",
    )
    assert r.status_code == 402
