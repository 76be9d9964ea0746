"""The in-flight limit per webhook (``FAQ_WEBHOOK_MAX_IN_FLIGHT``), in two steps.

- In this process: an ``asyncio.Semaphore`` per webhook and event loop (``local_slot``);
  deliveries wait briefly for their turn there (``take_local``, ``release_local``), cheaper
  than bouncing through the queue.
- Across processes: the webhook's slots in a Redis sorted set, each with a lease
  (``acquire_slots``: one Lua script that gives back the caller's old slots, drops lapsed
  ones and grants what is free; ``release_slots``). A slot whose holder died lapses with its
  lease. Redis is the running loop's client (``tenancy.redis.loop_client``).
"""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis
import structlog
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from tasks.deliveries.policy import LOCAL_WAIT_SECONDS
from tenancy.loop_resources import per_loop
from tenancy.redis import loop_client
from tenancy.settings import get_settings

log = structlog.get_logger(__name__)

_ACQUIRE = """
for i = 6, 5 + tonumber(ARGV[5]) do
  redis.call('ZREM', KEYS[1], ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local free = tonumber(ARGV[2]) - redis.call('ZCARD', KEYS[1])
local granted = 0
for i = 6 + tonumber(ARGV[5]), #ARGV do
  if granted >= free then break end
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[i])
  granted = granted + 1
end
if granted > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return granted
"""


async def _nothing_to_close(_: object) -> None:
    return None


def _acquire_script() -> AsyncScript:
    """The slot script, made once per loop (sent as EVALSHA, not the script text per call)."""
    return per_loop(
        "deliveries.slot_script", lambda: loop_client().register_script(_ACQUIRE), _nothing_to_close
    )


def _slot_key(webhook_id: str) -> str:
    return f"faq:webhook-in-flight:{webhook_id}"


async def acquire_slots(
    redis: aioredis.Redis,
    webhook_id: str,
    members: list[str],
    lease_seconds: float,
    release: list[str] | None = None,
) -> int:
    """Take up to ``len(members)`` of the webhook's slots (across processes), each with a
    lease; returns how many were granted (the first ones of ``members``). ``release``: slots
    of this caller to give back first, in the same round trip."""
    release = release or []
    settings = get_settings()
    now_ms = int(time.time() * 1000)
    lease_ms = int(lease_seconds * 1000)
    granted = await _acquire_script()(
        keys=[_slot_key(webhook_id)],
        args=[
            now_ms,
            settings.faq_webhook_max_in_flight,
            now_ms + lease_ms,
            lease_ms * 2,
            len(release),
            *release,
            *members,
        ],
        client=redis,
    )
    return int(granted)


async def release_slots(redis: aioredis.Redis, webhook_id: str, members: list[str]) -> None:
    if not members:
        return
    try:
        await redis.zrem(_slot_key(webhook_id), *members)
    except RedisError:
        # The attempt is recorded already; the slot's lease lets it go by itself.
        log.warning("webhook_slot_release_failed", webhook_id=webhook_id)


def local_slot(webhook_id: str, limit: int) -> asyncio.Semaphore:
    """In this process, deliveries to one webhook wait here briefly for their turn (cheaper
    than bouncing); the Redis slot then holds the limit across processes."""
    slots: dict[str, asyncio.Semaphore] = per_loop(
        "deliveries.local_slots", dict, _nothing_to_close
    )
    slot = slots.get(webhook_id)
    if slot is None:
        slot = slots[webhook_id] = asyncio.Semaphore(limit)
    return slot


async def take_local(slot: asyncio.Semaphore, wanted: int) -> int:
    """Up to ``wanted`` permits: a short wait for the first, then only those free now."""
    try:
        await asyncio.wait_for(slot.acquire(), LOCAL_WAIT_SECONDS)
    except TimeoutError:
        return 0
    taken = 1
    while taken < wanted and not slot.locked():
        await slot.acquire()  # free: returns at once
        taken += 1
    return taken


def release_local(slot: asyncio.Semaphore, count: int) -> None:
    for _ in range(count):
        slot.release()
