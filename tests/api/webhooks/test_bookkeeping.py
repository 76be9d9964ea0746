"""Issue 14: the bookkeeping of an org's deliveries is batched. One event fanned out to ten
webhooks is claimed in a few shared statements (the claims of the sends waiting meanwhile go
into one transaction), not one transaction per webhook; every delivery still arrives once and
is recorded as succeeded."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Delivery
from tenancy.db import tenant_session
from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Receiver

pytestmark = [pytest.mark.serial, pytest.mark.usefixtures("processes")]

WEBHOOKS = 10


async def test_fan_out_claims_share_transactions(
    org: OrgClient, receiver: Receiver, engine: AsyncEngine
) -> None:
    endpoints = [receiver.endpoint() for _ in range(WEBHOOKS)]
    for endpoint in endpoints:
        # By name: these connections stay out of the pool that other tests count (by address).
        url = receiver.url(endpoint.name, host="localhost")
        await create_webhook(org, url, events=["category.created"])
    r = await org.post("/categories", json={"name": "Fanned out"})
    assert r.status_code == 201
    category_id = (await r.get_json())["data"]["id"]
    for endpoint in endpoints:
        await endpoint.wait_for(1, timeout=30)
        assert [x.json["data"]["id"] for x in endpoint.unique().values()] == [category_id]

    async def rows() -> list[Delivery]:
        async with tenant_session(engine, org.info.schema_name) as session:
            return list((await session.execute(select(Delivery))).scalars())

    deadline = time.monotonic() + 20
    while {d.status for d in await rows()} != {"succeeded"}:
        assert time.monotonic() < deadline, [d.status for d in await rows()]
        await asyncio.sleep(0.1)
    found = await rows()
    assert len(found) == WEBHOOKS
    assert all(d.attempt_count == 1 and len(d.attempts) == 1 for d in found)
    # A claim statement stamps every row it leases with the same start: ten claims of their
    # own would leave ten different ones.
    starts = {d.attempt_started_at for d in found}
    assert len(starts) <= WEBHOOKS // 2, sorted(str(s) for s in starts)
