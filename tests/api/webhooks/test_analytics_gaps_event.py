"""The weekly ``analytics.gaps`` webhook event (issue 38): the ``analytics-gaps`` job writes,
once per ISO week, to each org with an active webhook subscribed to it, the content gaps and
suggested synonyms of the last 7 full days (``GET /analytics/gaps`` of that window), delivered
by the real worker to a real receiver, signed like every event."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.events import EVENT_CATALOG
from tasks.analytics import send_org_gaps
from tests.api.analytics.gaps_helpers import add_reader_searches, readers_searches
from tests.api.webhooks.conftest import create_webhook, wait_until
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Endpoint

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]


async def test_the_weekly_gaps_event_reaches_subscribed_webhooks_once_a_week(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine, endpoint: Endpoint
) -> None:
    assert "analytics.gaps" in EVENT_CATALOG
    await create_webhook(org, endpoint.url, events=["analytics.gaps"])
    await create_webhook(other_org, endpoint.url, events=["question.created"])
    # A week of its own (the scheduler's own run covers the current week): its 7 full days
    # before "today" hold the searches.
    today = datetime.now(UTC).date() + timedelta(days=14)
    start = datetime.combine(today - timedelta(days=3), time(12), UTC)
    await add_reader_searches(engine, org, start, *readers_searches("q_X"))
    await add_reader_searches(engine, other_org, start, (0, "x", "gift card", 0, None))

    assert await send_org_gaps(engine, org.info.id, org.info.schema_name, today) is True
    assert await send_org_gaps(engine, org.info.id, org.info.schema_name, today) is False
    # Not subscribed: nothing is written.
    assert (
        await send_org_gaps(engine, other_org.info.id, other_org.info.schema_name, today) is False
    )

    since = (today - timedelta(days=7)).isoformat()

    async def received() -> list[dict[str, Any]]:
        return [
            r.json
            for r in endpoint.unique().values()
            if r.json["event"] == "analytics.gaps" and r.json["data"]["since"] == since
        ]

    (event,) = await wait_until(received)
    data = event["data"]
    assert data["until"] == (today - timedelta(days=1)).isoformat()
    assert [g["query"] for g in data["contentGaps"]] == ["gift card", "sso"]
    assert [s["members"] for s in data["suggestedSynonyms"]] == [["swap seats", "transfer license"]]
    assert data["searchesExamined"] == 17
