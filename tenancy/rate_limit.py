"""Per-key request rate limits (fixed window in Redis), by the org's plan.

One pipelined INCR + EXPIRE per request. If Redis is unreachable the limiter fails open:
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

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }


class RateLimiter:
    def __init__(
        self, client: aioredis.Redis, *, window_seconds: int, overrides: str | None
    ) -> None:
        self._client = client
        self._window = window_seconds
        self._overrides = overrides

    def limit_for(self, plan: Plan) -> int:
        per_minute = requests_per_minute(plan, self._overrides)
        return max(1, per_minute * self._window // 60)

    async def hit(self, fingerprint: str, plan: Plan) -> RateDecision | None:
        limit = self.limit_for(plan)
        now = time.time()
        window = int(now // self._window)
        reset = max(1, int((window + 1) * self._window - now))
        key = f"faq:rate:{fingerprint}:{window}"
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.incr(key)
                pipe.expire(key, self._window + 1)
                count, _ = await pipe.execute()
        except (RedisError, OSError):
            log.warning("rate_limiter_unavailable")
            return None
        used = int(count)
        return RateDecision(limit, max(0, limit - used), reset, used <= limit)
