"""Benchmark of the publish sweep: how its cost grows with orgs and with due questions.

    .venv/bin/python -m bench.publish_sweep [--orgs 1000] [--due-orgs 100] [--runs 5]

Starts its own embedded PostgreSQL and Redis in a temp folder (fsync off: this measures CPU
and round trips, not the disk), provisions the orgs through ``tenancy.orgs.create_org``, gives
every org one question scheduled far in the future (so every org has a row in
``shared.publish_schedule``), then times:

1. the sweep with nothing due, over all the orgs (median of ``--runs``);
2. the same sweep after ``--due-orgs`` orgs got one due question each (100 questions due);
3. for contrast, a loop that looks for due questions in every tenant schema (what the sweep
   would cost without the shared index).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def start_services(tmp: Path) -> list[Any]:
    from cryptography.fernet import Fernet

    from tenancy.embedded import EmbeddedPostgres, EmbeddedRedis

    tmp.chmod(0o755)
    pg = EmbeddedPostgres(tmp / "pg", fsync=False, max_connections=100).start()
    redis = EmbeddedRedis(tmp / "redis").start()
    os.environ.update(
        DATABASE_URL=pg.url,
        REDIS_URL=redis.url,
        FAQ_SECRET_KEY=Fernet.generate_key().decode(),
        FAQ_ENV="test",
        FAQ_LOG_LEVEL="WARNING",
    )
    return [pg, redis]


async def seed(engine: Any, orgs: int) -> list[tuple[Any, str]]:
    """``orgs`` orgs, each with one question scheduled in 2099; returns (org, category id)."""
    from sqlalchemy import select

    from api.categories.models import Category
    from api.orgs import create_org
    from api.questions.schemas import QuestionCreate
    from api.questions.service import create_question
    from billing.plans import Plan
    from tenancy.db import tenant_session
    from tenancy.principal import Principal
    from tenancy.transactions import commit

    made = []
    started = time.perf_counter()
    for i in range(orgs):
        info = await create_org(engine, f"bench-{i}", None, Plan.ENTERPRISE)
        ctx = Principal(info.id, info.slug, info.plan, info.schema_name, "bench", ("admin",))
        async with tenant_session(engine, info.schema_name) as session:
            category_id = (
                await session.execute(select(Category.id).where(Category.is_default))
            ).scalar_one()
            body = QuestionCreate.model_validate(
                {
                    "title": "Far future",
                    "answer": "Not yet.",
                    "categoryId": category_id,
                    "status": "draft",
                    "scheduledPublishAt": "2099-01-01T00:00:00Z",
                }
            )
            await create_question(session, ctx, body)
            await commit(session)
        made.append((ctx, category_id))
        if (i + 1) % 100 == 0:
            print(f"  seeded {i + 1} orgs ({time.perf_counter() - started:.0f}s)", flush=True)
    return made


async def make_due(engine: Any, orgs: list[tuple[Any, str]]) -> None:
    """One question due now in each of ``orgs`` (created scheduled in the past)."""
    from api.questions.schemas import QuestionCreate
    from api.questions.service import create_question
    from tenancy.db import tenant_session
    from tenancy.transactions import commit

    for ctx, category_id in orgs:
        async with tenant_session(engine, ctx.schema_name) as session:
            body = QuestionCreate.model_validate(
                {
                    "title": "Due now",
                    "answer": "Publish me.",
                    "categoryId": category_id,
                    "status": "draft",
                    "scheduledPublishAt": "2020-01-01T00:00:00Z",
                }
            )
            await create_question(session, ctx, body)
            await commit(session)


async def scan_every_schema(engine: Any, orgs: list[tuple[Any, str]]) -> int:
    """The naive sweep's first step: ask every tenant schema for due questions."""
    from sqlalchemy import func, select

    from api.questions.models import Question
    from tenancy.clock import utcnow
    from tenancy.db import tenant_session

    due = 0
    for ctx, _ in orgs:
        async with tenant_session(engine, ctx.schema_name) as session:
            due += (
                await session.execute(
                    select(func.count()).where(
                        Question.deleted_at.is_(None),
                        Question.status == "scheduled",
                        Question.scheduled_publish_at <= utcnow(),
                    )
                )
            ).scalar_one()
    return due


async def timed(work: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await work()
    return time.perf_counter() - started, result


async def bench(args: argparse.Namespace) -> None:
    from tenancy.db import make_engine
    from tenancy.schemas import migrate_tenants, upgrade_shared_schema
    from tenancy.settings import get_settings

    get_settings.cache_clear()
    from tasks.publishing import publish_due_questions
    from tenancy.logging import configure_logging

    configure_logging("WARNING")

    engine = make_engine(get_settings(), pool_size=5)
    try:
        await upgrade_shared_schema(engine)
        await migrate_tenants(engine)
        print(f"seeding {args.orgs} orgs (one question scheduled in 2099 each)…", flush=True)
        orgs = await seed(engine, args.orgs)
        await publish_due_questions(engine)  # warm the pool and the plan cache

        idle = []
        for _ in range(args.runs):
            seconds, result = await timed(lambda: publish_due_questions(engine))
            assert result == {"orgs": 0, "published": 0}, result
            idle.append(seconds)
        scan_seconds, due = await timed(lambda: scan_every_schema(engine, orgs))
        assert due == 0

        await make_due(engine, orgs[: args.due_orgs])
        busy_seconds, busy = await timed(lambda: publish_due_questions(engine))
        assert busy == {"orgs": args.due_orgs, "published": args.due_orgs}, busy
        after_seconds, after = await timed(lambda: publish_due_questions(engine))
        assert after == {"orgs": 0, "published": 0}, after

        ms = 1000.0
        print()
        print(f"publish sweep over {args.orgs} orgs (each with a question scheduled later)")
        print(
            f"  nothing due:                       {statistics.median(idle) * ms:8.1f} ms "
            f"(median of {args.runs}; min {min(idle) * ms:.1f}, max {max(idle) * ms:.1f})"
        )
        print(
            f"  {args.due_orgs} questions due in {args.due_orgs} orgs:      "
            f"{busy_seconds * ms:8.1f} ms ({busy_seconds / args.due_orgs * ms:.1f} ms per org)"
        )
        print(f"  next sweep, nothing due again:     {after_seconds * ms:8.1f} ms")
        print(
            f"  contrast: visiting every schema:   {scan_seconds * ms:8.1f} ms "
            f"(one query per org; what the shared index avoids)"
        )
    finally:
        await engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orgs", type=int, default=1000)
    parser.add_argument("--due-orgs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.due_orgs > args.orgs:
        parser.error("--due-orgs must not exceed --orgs")
    tmp = Path(tempfile.mkdtemp(prefix="faq-bench-sweep-"))
    services = start_services(tmp)
    try:
        asyncio.run(bench(args))
    finally:
        services[1].stop()
        services[0].stop("immediate")
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
