"""The relay request after a commit that wrote events (``tenancy.outbox.request_relay``): the
flag in Redis, then one relay message only when no relay was queued; under a burst of one
org's writes the request costs one asynchronous Redis call on the event loop, no thread and
no broker call (issue 14: no synchronous Redis call on the request path)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis

from tenancy import outbox
from tenancy.outbox import relay_pending_key
from tenancy.settings import get_settings
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient


async def test_a_create_queues_one_relay_then_none_while_one_is_queued(
    org: OrgClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = redis.Redis.from_url(get_settings().require_redis_url())
    flag = relay_pending_key(org.info.id)
    client.delete(flag)
    queued: list[tuple[str, ...]] = []
    threads: list[Any] = []
    real_to_thread = asyncio.to_thread

    def enqueue(actor: str, *args: str) -> None:
        queued.append((actor, *args))

    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        threads.append(func)
        return await real_to_thread(func, *args, **kwargs)

    monkeypatch.setattr(outbox, "enqueue", enqueue)
    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    await create(org, title="First")
    assert queued == [(outbox.RELAY_ACTOR, org.info.id)]
    assert client.get(flag) == b"1"
    assert 0 < client.ttl(flag) <= outbox.RELAY_FLAG_TTL_SECONDS
    threads.clear()
    for n in range(3):
        await create(org, title=f"Next {n}")
    assert queued == [(outbox.RELAY_ACTOR, org.info.id)]  # the queued relay will see them
    assert threads == []  # no thread hop, no broker call
    client.delete(flag)  # the relay started: the next write queues another
    await create(org, title="After the relay started")
    assert queued == [(outbox.RELAY_ACTOR, org.info.id)] * 2
    client.close()
