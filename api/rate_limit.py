"""Per-key request rate limits (fixed window in Redis), by the org's plan; for a publishable
key also per client address (``FAQ_PUBLIC_KEY_PER_ADDRESS_PER_MINUTE``, so one visitor of a site
cannot use up the site's budget); and failed authentications per client address
(``failed_authentication``).

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
    # Refused by the per-address budget of a public key (not the key's own).
    by_address: bool = False

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


# KEYS[1]: the key's window counter; KEYS[2]: the (key, address) counter of the minute;
# KEYS[3] (optional): a key to read in the same round trip.
PUBLIC_HIT_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local by_address = redis.call('INCR', KEYS[2])
if by_address == 1 then redis.call('EXPIRE', KEYS[2], ARGV[2]) end
local fetched = false
if KEYS[3] then fetched = redis.call('GET', KEYS[3]) end
return {count, by_address, fetched}
"""


class RateLimiter:
    def __init__(
        self, client: aioredis.Redis, *, window_seconds: int, overrides: str | None
    ) -> None:
        self._client = client
        self._script = client.register_script(HIT_SCRIPT)
        self._public_script = client.register_script(PUBLIC_HIT_SCRIPT)
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

    async def hit_public(
        self,
        fingerprint: str,
        plan: str,
        address: str,
        per_address_per_minute: int,
        *,
        also_get: str | None = None,
    ) -> RateDecision | None:
        """``hit`` for a public key, also counting the client's address (a fixed one-minute
        window per key and address, TTL 61 s) in the same round trip."""
        limit = self.limit_for(plan)
        now = time.time()
        window = int(now // self._window)
        reset = max(1, int((window + 1) * self._window - now))
        minute = int(now // 60)
        keys = [f"faq:rate:{fingerprint}:{window}", f"faq:rate:{fingerprint}:{address}:{minute}"]
        if also_get is not None:
            keys.append(also_get)
        try:
            count, by_address, *fetched = await self._public_script(
                keys=keys, args=[self._window + 1, 61]
            )
        except (RedisError, OSError):
            log.warning("rate_limiter_unavailable")
            return None
        used = int(count)
        got = fetched[0] if fetched else None
        if int(by_address) > per_address_per_minute:
            address_reset = max(1, int((minute + 1) * 60 - now))
            return RateDecision(
                limit, max(0, limit - used), address_reset, False, got, by_address=True
            )
        return RateDecision(limit, max(0, limit - used), reset, used <= limit, got)

    async def failures_exceeded(self, address: str, per_minute: int) -> bool:
        """Whether ``address`` is past its failed authentications of this minute (a read, no
        count); False when Redis is unreachable."""
        try:
            count = await self._client.get(f"faq:authfail:{address}:{int(time.time() // 60)}")
        except (RedisError, OSError):
            log.warning("rate_limiter_unavailable")
            return False
        return count is not None and int(count) >= per_minute

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
