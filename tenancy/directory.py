"""Cached lookups of API keys and orgs, dropped on PostgreSQL NOTIFY from any process.

Plan changes and key revocations ``pg_notify`` on commit; every API process listens and
clears its cache, so a change is seen on the next request. A revoked key stops working within
``UNCONFIRMED_TTL`` (one second) in every process, also when:

- a lookup races the revocation: a lookup is cached only if no invalidation happened since it
  started (the invalidation epoch), so a read from before the revoke never re-fills the cache
  after the NOTIFY dropped it; entries are stamped when their lookup started;
- the listener's connection dies silently (a dropped NAT entry, a partition): a keep-alive
  ``SELECT 1`` every ``KEEPALIVE_SECONDS`` confirms it (every NOTIFY committed before the
  ``SELECT 1`` started arrives before its answer). Entries live ``ttl_seconds`` only while the
  last confirmation started less than ``UNCONFIRMED_TTL`` ago; otherwise (listener down, not
  yet confirmed, or a keep-alive stuck) they live ``UNCONFIRMED_TTL``. A keep-alive with no
  answer in ``KEEPALIVE_TIMEOUT_SECONDS`` drops the connection and the listener reconnects.

Unknown keys are cached too (a negative cache, at most ``MAX_MISSES`` entries for at most
``MISS_TTL`` seconds, by the same freshness rule), so a flood of one bad key costs PostgreSQL
one lookup. Creating a key announces it (``NEW_KEY_PAYLOAD``): every process drops its misses,
so a key created after its value was presented works once the announcement arrives.

Unknown org slugs are cached the same way (at most ``MAX_ORG_MISSES`` for at most
``ORG_MISS_TTL`` seconds, issue 26), so a flood of one invented slug (the help center needs no
key) costs one query; a slug no org can have (``tenancy.orgs.ORG_SLUG_RE``) costs none. A
new org's slug may sit in that cache until it is dropped, but nothing can reach an org before
its first key is created or its settings change (its help center is off until then), and both
announce themselves: every NOTIFY drops the org misses, ``NEW_KEY_PAYLOAD`` and
``NEW_ORG_PAYLOAD`` (for a creator that announces the org itself) included.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg
import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.clock import utcnow
from tenancy.db import shared_session
from tenancy.keys import INVALIDATION_CHANNEL, NEW_KEY_PAYLOAD, hash_key, public_origins
from tenancy.models import ApiKey, Organization
from tenancy.orgs import ORG_SLUG_RE

log = structlog.get_logger(__name__)

UNCONFIRMED_TTL = 1.0
KEEPALIVE_SECONDS = 0.25
KEEPALIVE_TIMEOUT_SECONDS = 2.0
MAX_MISSES = 10_000
MISS_TTL = 10.0
MAX_ORG_MISSES = 10_000  # slugs of at most 63 characters: well under 2 MB
ORG_MISS_TTL = 5.0
NEW_ORG_PAYLOAD = "new-org"


@dataclass(frozen=True)
class KeyRecord:
    fingerprint: str
    org_id: str
    scopes: tuple[str, ...]
    revoked: bool
    allowed_origins: tuple[str, ...] = ()
    expires_at: datetime | None = None
    member_id: str | None = None  # the member a key acts for (issue 30); never changes

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True)
class OrgRecord:
    id: str
    slug: str
    plan: str  # a plan name (billing/plans.py)
    schema_name: str
    default_locale: str = "en"
    locales: tuple[str, ...] = ("en",)
    # {"enabled": bool, "title": str, "primaryColor": "#rrggbb"} (issue 16); off by default.
    help_center: Mapping[str, Any] = field(default_factory=lambda: {"enabled": False})
    # How the org's readers' tokens are verified (issue 39; ``tenancy.readers``): secrets
    # encrypted as stored; empty when the org accepts no reader tokens.
    readers: Mapping[str, Any] = field(default_factory=dict)


class Directory:
    def __init__(self, engine: AsyncEngine, *, ttl_seconds: float = 300.0) -> None:
        self._engine = engine
        self._ttl = ttl_seconds
        self._keys: dict[str, tuple[float, KeyRecord]] = {}
        self._orgs: dict[str, tuple[float, OrgRecord]] = {}
        self._misses: OrderedDict[str, float] = OrderedDict()  # digest -> stamp, oldest first
        self._org_misses: OrderedDict[str, float] = OrderedDict()  # slug -> stamp, oldest first
        # org id -> (stamp, [(origin, expiry)]): the origins of the org's public keys (CORS).
        self._origins: dict[str, tuple[float, list[tuple[str, datetime | None]]]] = {}
        self._listening = False
        # When the last keep-alive that was answered started (monotonic seconds).
        self._confirmed = float("-inf")
        self._invalidations = 0
        self._task: asyncio.Task[None] | None = None

    def _known_good(self, now: float) -> bool:
        return self._listening and now - self._confirmed < UNCONFIRMED_TTL

    def _fresh(self, stamp: float) -> bool:
        now = time.monotonic()
        age = now - stamp
        return age < UNCONFIRMED_TTL or (age < self._ttl and self._known_good(now))

    @property
    def listening(self) -> bool:
        """The listener is connected and a keep-alive confirmed it less than a second ago."""
        return self._known_good(time.monotonic())

    @property
    def invalidations(self) -> int:
        """How many times the cache was dropped (NOTIFY, listener (re)start, explicit)."""
        return self._invalidations

    def clear(self, *_: Any) -> None:
        self._invalidations += 1
        self._keys.clear()
        self._orgs.clear()
        self._misses.clear()
        self._org_misses.clear()
        self._origins.clear()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload in (NEW_KEY_PAYLOAD, NEW_ORG_PAYLOAD):
            # A new key (or org): only the cached misses and public origins can be wrong.
            self._invalidations += 1
            self._misses.clear()
            self._org_misses.clear()
            self._origins.clear()
        else:
            self.clear()

    def cached(self, raw_key: str, slug: str) -> tuple[KeyRecord, OrgRecord] | None:
        """The key and the org as this process holds them, when it holds both, fresh; None
        otherwise (no lookup: ``key`` and ``org`` look them up)."""
        key = self._keys.get(hash_key(raw_key))
        org = self._orgs.get(slug)
        if key is None or org is None or not self._fresh(key[0]) or not self._fresh(org[0]):
            return None
        return key[1], org[1]

    async def key(self, raw_key: str) -> KeyRecord | None:
        digest = hash_key(raw_key)
        hit = self._keys.get(digest)
        if hit and self._fresh(hit[0]):
            return hit[1]
        missed = self._misses.get(digest)
        if missed is not None:
            if self._fresh(missed) and time.monotonic() - missed < MISS_TTL:
                return None
            del self._misses[digest]
        epoch, started = self._invalidations, time.monotonic()
        record = await self._fetch_key(digest)
        if self._invalidations != epoch:
            return record  # an invalidation happened meanwhile: the answer may be stale
        if record is not None:
            self._keys[digest] = (started, record)
        else:
            self._misses[digest] = started
            while len(self._misses) > MAX_MISSES:
                self._misses.popitem(last=False)
        return record

    async def _fetch_key(self, digest: str) -> KeyRecord | None:
        async with shared_session(self._engine) as session:
            row = (
                await session.execute(
                    select(
                        ApiKey.fingerprint,
                        ApiKey.org_id,
                        ApiKey.scopes,
                        ApiKey.revoked,
                        ApiKey.allowed_origins,
                        ApiKey.expires_at,
                        ApiKey.member_id,
                    ).where(ApiKey.key_hash == digest)
                )
            ).first()
        if row is None:
            return None
        return KeyRecord(
            row.fingerprint,
            row.org_id,
            tuple(row.scopes),
            row.revoked,
            tuple(row.allowed_origins),
            row.expires_at,
            row.member_id,
        )

    async def public_origins(self, org_id: str) -> frozenset[str]:
        """The origins listed by the org's active public keys (a CORS preflight carries no
        key), cached like keys; a key's expiry is checked at each call."""
        hit = self._origins.get(org_id)
        if hit and self._fresh(hit[0]):
            listed = hit[1]
        else:
            epoch, started = self._invalidations, time.monotonic()
            async with shared_session(self._engine) as session:
                listed = await public_origins(session, org_id)
            if self._invalidations == epoch:
                self._origins[org_id] = (started, listed)
        now = utcnow()
        return frozenset(o for o, expiry in listed if expiry is None or expiry > now)

    async def org(self, slug: str) -> OrgRecord | None:
        hit = self._orgs.get(slug)
        if hit and self._fresh(hit[0]):
            return hit[1]
        missed = self._org_misses.get(slug)
        if missed is not None:
            if self._fresh(missed) and time.monotonic() - missed < ORG_MISS_TTL:
                return None
            del self._org_misses[slug]
        if not ORG_SLUG_RE.fullmatch(slug):
            return None  # no org has it: nothing to ask PostgreSQL
        epoch, started = self._invalidations, time.monotonic()
        async with shared_session(self._engine) as session:
            row = (
                await session.execute(
                    select(
                        Organization.id,
                        Organization.slug,
                        Organization.plan,
                        Organization.schema_name,
                        Organization.default_locale,
                        Organization.locales,
                        Organization.help_center,
                        Organization.readers,
                    ).where(Organization.slug == slug)
                )
            ).first()
        if row is None:
            if self._invalidations == epoch:
                self._org_misses[slug] = started
                while len(self._org_misses) > MAX_ORG_MISSES:
                    self._org_misses.popitem(last=False)
            return None
        record = OrgRecord(
            row.id,
            row.slug,
            row.plan,
            row.schema_name,
            row.default_locale,
            tuple(row.locales),
            dict(row.help_center),
            dict(row.readers),
        )
        if self._invalidations == epoch:
            self._orgs[slug] = (started, record)
        return record

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _listen_forever(self) -> None:
        while True:
            try:
                # Through the engine, so TLS and every connect option match the app's own.
                async with self._engine.connect() as conn:
                    raw = await conn.get_raw_connection()
                    listener: asyncpg.Connection = raw.driver_connection
                    await listener.add_listener(INVALIDATION_CHANNEL, self._notified)
                    self.clear()
                    self._listening = True
                    try:
                        while not listener.is_closed():
                            started = time.monotonic()
                            await asyncio.wait_for(
                                listener.execute("SELECT 1"), KEEPALIVE_TIMEOUT_SECONDS
                            )
                            self._confirmed = started
                            await asyncio.sleep(KEEPALIVE_SECONDS)
                    finally:
                        self._listening = False
                        # Never hand a listening connection back to the pool; no goodbye on a
                        # connection that may not answer (a graceful close would wait on it).
                        listener.terminate()
                        await conn.invalidate()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("directory_listener_down", exc_info=True)
            self._listening = False
            self.clear()
            await asyncio.sleep(1)
