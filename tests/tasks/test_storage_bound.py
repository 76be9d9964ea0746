"""The worst case bytes one org can add per minute (docs/reliability.md, "Bounded storage per
tenant"). The costliest request for storage is a question reorder: every question whose order
changes gets a revision (its snapshot), an outbox event (the question) and, once relayed, one
delivery per subscribed webhook (the question again, stored once). Measured here on a small
org, it must stay under the formula the docs extrapolate to each plan's rate limit."""

from __future__ import annotations

import base64
import json
import os
import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import CAPS, REQUESTS_PER_MINUTE, Plan
from tasks.relay import relay_org
from tests.api.questions.helpers import create, default_category
from tests.fixtures.orgs import OrgClient

ROW_OVERHEAD = 1_024  # per row: tuple header, ids, timestamps, attempts, index entries
TOAST_FACTOR = 1.05  # TOAST chunks (~2 KB each) and their index
IDS_PER_REORDER = 1_000  # api/schemas.py IdsBody
ANSWER_MAX = 100_000  # api/questions/schemas.py Answer
QUESTION_FIELDS = 1_500  # title (500), slug, ids, timestamps, keys of the public shape


# Copies of a moved question one reorder writes besides its deliveries: a revision (kept 50
# per question), an outbox row (deleted by the relay), and the question's new row version with
# its search vector and their index entries (dead tuples until vacuum): about 4.8 measured.
OTHER_COPIES = 6


def reorder_bytes(questions: int, webhooks: int, question_bytes: int) -> float:
    """Upper bound of the bytes one reorder of ``questions`` adds: per question ``webhooks``
    deliveries (each holding the question once) and ``OTHER_COPIES`` more copies."""
    per_copy = question_bytes * TOAST_FACTOR + ROW_OVERHEAD
    return questions * (webhooks + OTHER_COPIES) * per_copy


def per_minute_bound(plan: Plan) -> float:
    questions = min(IDS_PER_REORDER, CAPS[plan].questions or IDS_PER_REORDER)
    per_request = reorder_bytes(questions, CAPS[plan].webhook_limit, ANSWER_MAX + QUESTION_FIELDS)
    return per_request * REQUESTS_PER_MINUTE[plan]


async def relation_bytes(engine: AsyncEngine, schema: str) -> int:
    async with engine.connect() as conn:
        # On Citus an org's tables live on a worker: their size is citus_total_relation_size.
        citus = await conn.scalar(text("SELECT count(*) FROM pg_extension WHERE extname = 'citus'"))
        size_of = (
            "CASE WHEN c.oid IN (SELECT logicalrelid FROM pg_dist_partition) "
            "THEN citus_total_relation_size(c.oid) ELSE pg_total_relation_size(c.oid) END"
            if citus
            else "pg_total_relation_size(c.oid)"
        )
        size = await conn.scalar(
            text(
                f"SELECT sum({size_of}) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind = 'r' AND (n.nspname = :s "
                "OR (n.nspname = 'shared' AND c.relname = 'outbox'))"
            ),
            {"s": schema},
        )
    return int(size or 0)


async def test_a_reorder_adds_no_more_than_the_formula(engine: AsyncEngine, org: OrgClient) -> None:
    questions, webhooks, answer_bytes, reorders = 40, CAPS[Plan.STARTER].webhook_limit, 20_000, 3
    category = await default_category(org)
    made: list[dict[str, Any]] = []
    for i in range(questions):
        answer = base64.b64encode(os.urandom(answer_bytes * 3 // 4)).decode()  # incompressible
        made.append(await create(org, category, title=f"Question {i}", answer=answer))
    hooks: list[str] = []
    for _ in range(webhooks):
        r = await org.post(
            "/webhooks",
            json={"url": "https://127.0.0.1:9/hook", "events": ["question.updated"]},
        )
        assert r.status_code == 201, await r.get_data()
        hooks.append((await r.get_json())["data"]["id"])
    await relay_org(engine, org.info.id)  # the creates' events (no subscriber): out of the way
    question_bytes = max(len(json.dumps(q)) for q in made)
    ids = [q["id"] for q in made]

    r = await org.post("/questions/reorder", json={"ids": ids}, scope="write")
    assert r.status_code == 200  # orders 0..n-1: from here each reversal moves every question
    await relay_org(engine, org.info.id)

    before = await relation_bytes(engine, org.info.schema_name)
    started = time.perf_counter()
    for n in range(reorders):
        order = ids if n % 2 else list(reversed(ids))
        r = await org.post("/questions/reorder", json={"ids": order}, scope="write")
        assert r.status_code == 200, await r.get_data()
        # One event per moved question, and the reorder's one audit event (its entry holds
        # two maps of id to order: small next to the questions).
        assert await relay_org(engine, org.info.id) == questions + 1
    elapsed = time.perf_counter() - started
    added = (await relation_bytes(engine, org.info.schema_name) - before) / reorders

    bound = reorder_bytes(questions, webhooks, question_bytes)
    deliveries_alone = questions * webhooks * question_bytes
    print(
        f"\nreorder of {questions} x {question_bytes} B questions, {webhooks} webhooks: "
        f"{added / 1e6:.1f} MB per request (bound {bound / 1e6:.1f} MB); "
        f"{added * reorders / elapsed / 1e6:.0f} MB/s written (request and relay, one process)"
    )
    for plan in (Plan.STARTER, Plan.PRO, Plan.ENTERPRISE):
        print(f"{plan.value}: worst case {per_minute_bound(plan) / 1e12:.2f} TB per minute")
    assert deliveries_alone * 0.8 <= added <= bound, (added, bound)
    # The 1,200 deliveries queued here point nowhere: stop them (a deleted webhook's pending
    # deliveries stop), so the next worker of the session does not spend its time on them.
    for hook in hooks:
        assert (await org.delete(f"/webhooks/{hook}")).status_code == 204
