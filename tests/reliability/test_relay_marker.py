"""Issue 14: a relay that sees the next relay of its org already queued (an event committed
while it drained, so the relay flag is set again) leaves the org's marker and the final
re-check to that relay instead of clearing the marker (an autocommit DELETE, a LOCK and a
SELECT per relay, for nothing). The marker stays, so a lost message still leaves the org to
the periodic relay; with no relay queued the marker is cleared as before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from sqlalchemy import Engine, event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from tasks.relay import relay_org
from tenancy.db import shared_session, tenant_session
from tenancy.outbox import record_event, relay_pending_key
from tenancy.settings import get_settings
from tenancy.transactions import commit
from tests.fixtures.orgs import OrgClient


@pytest.fixture
def statements() -> Iterator[list[str]]:
    sent: list[str] = []

    def on_cursor(*args: Any) -> None:
        sent.append(str(args[2]))

    event.listen(Engine, "before_cursor_execute", on_cursor)
    try:
        yield sent
    finally:
        event.remove(Engine, "before_cursor_execute", on_cursor)


async def _marked(engine: AsyncEngine, org_id: str) -> bool:
    async with shared_session(engine) as session:
        found = await session.execute(
            text("SELECT 1 FROM shared.outbox_pending WHERE org_id = :o"), {"o": org_id}
        )
        return found.first() is not None


async def _outbox_rows(engine: AsyncEngine, schema: str) -> int:
    async with tenant_session(engine, schema) as session:
        return int(await session.scalar(text("SELECT count(*) FROM outbox")) or 0)


async def _write_event(engine: AsyncEngine, org: OrgClient) -> None:
    async with tenant_session(engine, org.info.schema_name) as session:
        await record_event(session, org.info.id, "category.created", {"id": "cat_x"})
        await commit(session)


async def test_relay_leaves_the_marker_to_the_relay_queued_behind_it(
    engine: AsyncEngine, org: OrgClient, statements: list[str]
) -> None:
    client = redis.Redis.from_url(get_settings().require_redis_url())
    flag = relay_pending_key(org.info.id)
    await _write_event(engine, org)
    assert await _marked(engine, org.info.id)

    def requeue_while_draining(*args: Any) -> None:
        # A writer committing while the relay drains queues the next relay: its flag is set.
        if str(args[2]).startswith("DELETE FROM __tenant__.outbox"):
            client.set(flag, b"1", ex=10)

    statements.clear()
    event.listen(Engine, "before_cursor_execute", requeue_while_draining)
    try:
        assert await relay_org(engine, org.info.id, clear_flag=True) == 1
    finally:
        event.remove(Engine, "before_cursor_execute", requeue_while_draining)
    assert not [s for s in statements if "outbox_pending" in s]
    assert not [s for s in statements if s.startswith("LOCK TABLE outbox")]
    assert await _marked(engine, org.info.id)  # for the queued relay (or the periodic one)
    assert await _outbox_rows(engine, org.info.schema_name) == 0

    # The queued relay: nothing queued behind it, so it clears the marker.
    client.delete(flag)
    assert await relay_org(engine, org.info.id, clear_flag=True) == 0
    assert not await _marked(engine, org.info.id)
    assert client.get(flag) is None
    client.close()
