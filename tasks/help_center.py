"""``help-center-views``: the help center's recorded page views (Redis, one set per org per
day, ``api.helpcenter.visitors``) counted into each org's ``question_views_daily``.

Every ``PERIOD_SECONDS`` it recounts today and yesterday (a view recorded just before
midnight is counted after it) for the orgs that had views; a day's count is the number of
distinct (question, visitor) members, written as the higher of the stored and the counted
value, so running it twice, or concurrently, never double counts. An org that fails is
logged and the others still run; the actor then raises so Dramatiq retries.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter.visitors import count_views, orgs_with_views, store_view_counts
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register
from tasks.org_failures import each_org
from tasks.registry import actor
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.redis import loop_client
from tenancy.transactions import commit

log = structlog.get_logger(__name__)
PERIOD_SECONDS = 300.0


class AggregationIncomplete(Exception):
    pass


async def aggregate_views(
    engine: AsyncEngine | None = None, today: date | None = None
) -> dict[str, Any]:
    engine = engine or worker_engine()
    today = today or datetime.now(UTC).date()
    days = (today - timedelta(days=1), today)
    client = loop_client()
    by_org: dict[str, list[date]] = {}
    for day in days:
        for org_id in await orgs_with_views(client, day):
            by_org.setdefault(org_id, []).append(day)
    async with shared_session(engine) as session:
        rows = await session.execute(
            select(Organization.id, Organization.schema_name).where(
                Organization.id.in_(list(by_org))
            )
        )
        schemas = {row.id: row.schema_name for row in rows}

    async def aggregate_org(org_id: str) -> int:
        written = 0
        for day in by_org[org_id]:
            counts = await count_views(client, org_id, day)
            async with tenant_session(engine, schemas[org_id]) as session:
                written += await store_view_counts(session, day, counts)
                await commit(session)
        return written

    done, failed = await each_org("help-center-views", sorted(schemas), aggregate_org)
    totals = {"orgs": len(schemas), "rows": sum(done), "failed": failed}
    log.info("help_center_views", **totals)
    return totals


@actor("help_center.aggregate_views", max_retries=3, time_limit=600_000)
async def aggregate_views_actor() -> None:
    totals = await aggregate_views()
    if totals["failed"]:
        raise AggregationIncomplete(f"{totals['failed']} org(s) failed; retrying")


register(
    PeriodicJob(
        name="help-center-views",
        run=aggregate_views,
        actor_name="help_center.aggregate_views",
        period_seconds=lambda: PERIOD_SECONDS,
    )
)
