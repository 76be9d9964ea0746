"""Per-key request rate limits (fixed window in Redis), by the org's plan; for a publishable
key also per client address (``FAQ_PUBLIC_KEY_PER_ADDRESS_PER_MINUTE``, so one visitor of a site
cannot use up the site's budget); failed authentications per client address
(``failed_authentication``); and the help center's pages and searches per client address and
per org (``hit_help_center``).

A client address is never part of a key name: it is named by its digest
(``api.http.client_addresses.AddressDigests``, an HMAC keyed by ``FAQ_SECRET_KEY``; IPv6 by
its /64).

One Redis command per request: a small Lua script (INCR, EXPIRE on the window's first hit,
and optionally a GET of another key, the org's response-cache generation), one round trip
and far less client work than a pipeline. If Redis is unreachable the limiter fails open:
writes must keep working while Redis is down, and PostgreSQL still holds every change.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import redis.asyncio as aioredis
import structlog
from redis.exceptions import RedisError

from api.http.client_addresses import AddressDigests
from billing.plans import Plan, requests_per_minute

log = structlog.get_logger(__name__)
MAX_REFUSING = 10_000  # help-center buckets remembered as refusing, per process


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


# GCRA (the generic cell rate algorithm: a token bucket kept as one number), one bucket per
# key, in order (address before org). KEYS[i]: the bucket's theoretical arrival time (ms).
# ARGV[1]: now (ms); ARGV[2i], ARGV[2i+1]: the emission interval and the burst tolerance (ms)
# of KEYS[i]. Stops at the first bucket that refuses, so a request refused by its address's
# bucket takes nothing from its org's; returns {i, ms until KEYS[i] admits again} or {0, 0}.
GCRA_SCRIPT = """
local now = tonumber(ARGV[1])
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i])
  local tolerance = tonumber(ARGV[2 * i + 1])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  if tat - now > tolerance then return {i, tat - now - tolerance} end
  tat = tat + interval
  redis.call('SET', KEYS[i], tat, 'PX', tat - now)
end
return {0, 0}
"""


@dataclass(frozen=True)
class HelpCenterLimits:
    """Requests per minute (0: no limit), ``FAQ_HC_*``; a client may spend ``burst_seconds``
    worth of a budget at once, then gets the rate, evenly spread."""

    pages_per_address: int
    searches_per_address: int
    pages_per_org: int
    searches_per_org: int
    burst_seconds: int = 10

    def bucket(self, per_minute: int) -> tuple[int, int]:
        """(emission interval, burst tolerance) in ms of a budget of ``per_minute``."""
        interval = max(1, round(60_000 / per_minute))
        burst = max(1, per_minute * self.burst_seconds // 60)
        return interval, interval * (burst - 1)


@dataclass(frozen=True)
class Refusal:
    """A help-center request over a budget: whose (``address`` or ``org``) and in how many
    seconds that budget admits a request again."""

    by: str
    reset_seconds: int


class RateLimiter:
    def __init__(
        self,
        client: aioredis.Redis,
        *,
        window_seconds: int,
        overrides: str | None,
        address_secret: str,
    ) -> None:
        self._client = client
        self._script = client.register_script(HIT_SCRIPT)
        self._public_script = client.register_script(PUBLIC_HIT_SCRIPT)
        self._gcra_script = client.register_script(GCRA_SCRIPT)
        # Help-center buckets that refused, and until when (``time.time()``): a bucket's
        # arrival time only grows, so until then it refuses for sure; no round trip needed.
        self._refusing: dict[str, float] = {}
        self._window = window_seconds
        self._overrides = overrides
        self._digest = AddressDigests(address_secret)

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
        keys = [
            f"faq:rate:{fingerprint}:{window}",
            f"faq:rate:{fingerprint}:{self._digest(address)}:{minute}",
        ]
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
            key = f"faq:authfail:{self._digest(address)}:{int(time.time() // 60)}"
            count = await self._client.get(key)
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
            key = f"faq:authfail:{self._digest(address)}:{window}"
            count, *_ = await self._script(keys=[key], args=[61])
        except (RedisError, OSError):
            log.warning("rate_limiter_unavailable")
            return None
        used = int(count)
        return RateDecision(per_minute, max(0, per_minute - used), reset, used <= per_minute)

    async def hit_help_center(
        self,
        address: str | None,
        org_slug: str | None,
        *,
        search: bool,
        limits: HelpCenterLimits,
    ) -> Refusal | None:
        """Count one help-center request (one round trip, a GCRA bucket per budget): a page
        of ``address`` (None: not counted per address) and of ``org_slug`` (None: a path that
        names no org), and a search of each when ``search``. The refusal of the first budget
        it is over, else None; None too when Redis is unreachable (fail open)."""
        counters: list[tuple[str, int, str]] = []
        if address is not None:
            subject = self._digest(address)
            counters.append((f"faq:hc:rate:a:{subject}", limits.pages_per_address, "address"))
            if search:
                counters.append(
                    (f"faq:hc:rate:as:{subject}", limits.searches_per_address, "address")
                )
        if org_slug is not None:
            counters.append((f"faq:hc:rate:o:{org_slug}", limits.pages_per_org, "org"))
            if search:
                counters.append((f"faq:hc:rate:os:{org_slug}", limits.searches_per_org, "org"))
        counters = [counter for counter in counters if counter[1] > 0]
        if not counters:
            return None
        now = time.time()
        for key, _, by in counters:
            until = self._refusing.get(key, 0.0)
            if until > now:
                return Refusal(by, max(1, math.ceil(until - now)))
        args = [int(now * 1000)]
        for _, per_minute, _ in counters:
            args.extend(limits.bucket(per_minute))
        try:
            over, wait_ms = await self._gcra_script(keys=[key for key, _, _ in counters], args=args)
        except (RedisError, OSError):
            log.warning("rate_limiter_unavailable")
            return None
        if not over:
            return None
        key, _, by = counters[int(over) - 1]
        self._remember_refusal(key, now + int(wait_ms) / 1000)
        return Refusal(by, max(1, math.ceil(int(wait_ms) / 1000)))

    def _remember_refusal(self, key: str, until: float) -> None:
        if len(self._refusing) >= MAX_REFUSING:
            now = time.time()
            self._refusing = {k: v for k, v in self._refusing.items() if v > now}
            if len(self._refusing) >= MAX_REFUSING:
                self._refusing.clear()
        self._refusing[key] = until
