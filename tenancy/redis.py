"""The one Redis client factory. Every Redis connection of the service is made here.

- ``connect``: a new asyncio client (its owner closes it), for a resource with its own life
  (the API's rate limiter).
- ``loop_client``: the running event loop's shared client (closed with the loop's resources).
- ``sync_client``: a blocking client, for the scheduler's lock loop and after-commit sends
  that run in a thread.

Short socket timeouts everywhere: Redis is a cache, a counter and a queue; a slow Redis must
not hold a request or a worker.
"""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

from tenancy.loop_resources import per_loop
from tenancy.settings import get_settings

TIMEOUT_SECONDS = 1.0


def connect(url: str | None = None, *, timeout: float = TIMEOUT_SECONDS) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        url or get_settings().require_redis_url(),
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
    )


async def _close(client: aioredis.Redis) -> None:
    await client.aclose()


def loop_client() -> aioredis.Redis:
    """The running loop's client (``REDIS_URL``), made on first use."""
    return per_loop("redis", connect, _close)


def sync_client(*, timeout: float = 5.0) -> redis.Redis:
    return redis.Redis.from_url(
        get_settings().require_redis_url(),
        socket_timeout=timeout,
        socket_connect_timeout=min(timeout, 2.0),
    )
