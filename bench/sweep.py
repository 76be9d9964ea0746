"""Publish sweep rows, reusing the questions engineer's ``bench/publish_sweep.py`` (its
``make_due`` and ``timed``) on this bench's orgs: the real job function
(``tasks.publishing.publish_due_questions``, what ``faq jobs run publish-sweep`` runs), timed
in-process with every org present and every org holding a row in ``shared.publish_schedule``
(far in the future), first with nothing due, then with 100 questions due in 100 orgs."""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

from bench import publish_sweep


async def _measure(records: list[dict[str, Any]], runs: int) -> dict[str, Any]:
    from sqlalchemy import select, text

    from api.categories.models import Category
    from billing.plans import Plan
    from tasks.publishing import publish_due_questions
    from tenancy.db import make_engine, tenant_session
    from tenancy.principal import Principal
    from tenancy.settings import get_settings

    engine = make_engine(get_settings(), pool_size=5)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO shared.publish_schedule (org_id, next_due_at) "
                    "SELECT id, '2099-01-01T00:00:00Z' FROM shared.organizations "
                    "ON CONFLICT (org_id) DO NOTHING"
                )
            )
        await publish_due_questions(engine)  # pool and plan cache warm, as in a running worker
        idle = []
        for _ in range(runs):
            seconds, result = await publish_sweep.timed(lambda: publish_due_questions(engine))
            assert result == {"orgs": 0, "published": 0}, result
            idle.append(seconds * 1000)
        due_orgs = []
        for r in records:
            async with tenant_session(engine, r["schema"]) as session:
                category = (
                    await session.execute(select(Category.id).where(Category.is_default))
                ).scalar_one()
            ctx = Principal(r["id"], r["slug"], Plan.ENTERPRISE, r["schema"], "bench", ("admin",))
            due_orgs.append((ctx, category))
        await publish_sweep.make_due(engine, due_orgs)
        busy_s, busy = await publish_sweep.timed(lambda: publish_due_questions(engine))
        return {"idle_ms": idle, "busy_ms": busy_s * 1000, "busy": busy}
    finally:
        await engine.dispose()


def sweep_rows(bench: Any) -> list[dict[str, Any]]:
    n = len(bench.all_orgs)
    due = bench.all_orgs[1:101]
    out = asyncio.run(_measure(due, 5))
    idle_ms = statistics.median(out["idle_ms"])
    busy_ms = out["busy_ms"]
    return [
        {
            "name": f"publish sweep, nothing due ({n} orgs)",
            "measured_as": "publish_due_questions, median of 5",
            "figure": idle_ms,
            "reference": 100.0,
            "unit": "ms",
            "target": "< 100 ms",
            "met": idle_ms < 100,
            "ratio": idle_ms / 100,
        },
        {
            "name": "publish sweep, 100 due in 100 orgs",
            "measured_as": f"one sweep: {out['busy']}",
            "figure": busy_ms,
            "reference": 2000.0,
            "unit": "ms",
            "target": "< 2 s",
            "met": busy_ms < 2000 and out["busy"].get("published") == len(due),
            "ratio": busy_ms / 2000,
        },
    ]
