"""Per-key request rate limits (fixed window in Redis), by the org's plan; and failed
authentications per client address (``failed_authentication``).

One Redis command per request: a small Lua script (INCR, EXPIRE on the window's first hit,
and optionally a GET of another key, the org's response-cache generation), one round trip
and far less client work than a pipeline. If Redis is unreachable the limiter fails open:
writes must keep working while Redis is down, and PostgreSQL still holds every change.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError

from billing.plans import Plan, requests_per_minute

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RateDecision:
    limit: int
    remaining: int
    reset_seconds: int
    allowed: bool
    # The value of ``also_get`` read in the same round trip (the org's cache generation).
    fetched: bytes | None = None

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }


# KEYS[1]: the window counter; KEYS[2] (optional): a key to read in the same round trip.
HIT_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local fetched = false
if KEYS[2] then fetched = redis.call('GET', KEYS[2]) end
return {count, fetched}
"""


class RateLimiter:
    def __init__(
        self, client: aioredis.Redis, *, window_seconds: int, overrides: str | None
    ) -> None:
        self._client = client
        self._script = client.register_script(HIT_SCRIPT)
        self._window = window_seconds
        self._overrides = overrides

    def limit_for(self, plan: str) -> int:
        per_minute = requests_per_minute(Plan(plan), self._overrides)
        return max(1, per_minute * self._window // 60)

    async def hit(
        self, fingerprint: str, plan: str, *, also_get: str | None = None
    ) -> RateDecision | None:
        limit = self.limit_for(plan)
        now = time.time()
        window = int(now // self._window)
        reset = max(1, int((window + 1) * self._window - now))
        key = f"faq:rate:{fingerprint}:{window}"
        try:
            keys = [key] if also_get is None else [key, also_get]
            count, *fetched = await self._script(keys=keys, args=[self._window + 1])
        except (RedisError, OSError):
            log.warning("rate_limiter_unavailable")
            return None
        used = int(count)
        return RateDecision(
            limit, max(0, limit - used), reset, used <= limit, fetched[0] if fetched else None
        )

    async def failed_authentication(self, address: str, per_minute: int) -> RateDecision | None:
        """Count one failed authentication from ``address`` (a fixed one-minute window, one
        round trip); None (fail open) when Redis is unreachable."""
        now = time.time()
        window = int(now // 60)
        reset = max(1, int((window + 1) * 60 - now))
        try:
            count, *_ = await self._script(keys=[f"faq:authfail:{address}:{window}"], args=[61])
        except (RedisError, OSError):
            log.warning("rate_limiter_unavailable")
            return None
        used = int(count)
        return RateDecision(per_minute, max(0, per_minute - used), reset, used <= per_minute)
