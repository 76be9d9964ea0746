"""Cached lookups of API keys and orgs, dropped on PostgreSQL NOTIFY from any process.

Plan changes and key revocations ``pg_notify`` on commit; every API process listens and
clears its cache, so a change is seen on the next request. While the listener is down,
entries live one second only.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import shared_session
from tenancy.keys import INVALIDATION_CHANNEL, hash_key
from tenancy.models import ApiKey, Organization

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class KeyRecord:
    fingerprint: str
    org_id: str
    scopes: tuple[str, ...]
    revoked: bool


@dataclass(frozen=True)
class OrgRecord:
    id: str
    slug: str
    plan: str  # a plan name (billing/plans.py)
    schema_name: str


class Directory:
    def __init__(self, engine: AsyncEngine, *, ttl_seconds: float = 300.0) -> None:
        self._engine = engine
        self._ttl = ttl_seconds
        self._keys: dict[str, tuple[float, KeyRecord]] = {}
        self._orgs: dict[str, tuple[float, OrgRecord]] = {}
        self._listening = False
        self._task: asyncio.Task[None] | None = None

    def _fresh(self, stamp: float) -> bool:
        age = time.monotonic() - stamp
        return age < (self._ttl if self._listening else 1.0)

    def clear(self, *_: Any) -> None:
        self._keys.clear()
        self._orgs.clear()

    async def key(self, raw_key: str) -> KeyRecord | None:
        digest = hash_key(raw_key)
        hit = self._keys.get(digest)
        if hit and self._fresh(hit[0]):
            return hit[1]
        async with shared_session(self._engine) as session:
            row = (
                await session.execute(
                    select(ApiKey.fingerprint, ApiKey.org_id, ApiKey.scopes, ApiKey.revoked).where(
                        ApiKey.key_hash == digest
                    )
                )
            ).first()
        if row is None:
            return None
        record = KeyRecord(row.fingerprint, row.org_id, tuple(row.scopes), row.revoked)
        self._keys[digest] = (time.monotonic(), record)
        return record

    async def org(self, slug: str) -> OrgRecord | None:
        hit = self._orgs.get(slug)
        if hit and self._fresh(hit[0]):
            return hit[1]
        async with shared_session(self._engine) as session:
            row = (
                await session.execute(
                    select(
                        Organization.id,
                        Organization.slug,
                        Organization.plan,
                        Organization.schema_name,
                    ).where(Organization.slug == slug)
                )
            ).first()
        if row is None:
            return None
        record = OrgRecord(row.id, row.slug, row.plan, row.schema_name)
        self._orgs[slug] = (time.monotonic(), record)
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
                    await listener.add_listener(INVALIDATION_CHANNEL, self.clear)
                    self.clear()
                    self._listening = True
                    try:
                        while not listener.is_closed():
                            await asyncio.sleep(2)
                            await listener.execute("SELECT 1")
                    finally:
                        self._listening = False
                        # Never hand a listening connection back to the pool.
                        await conn.invalidate()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("directory_listener_down", exc_info=True)
            self._listening = False
            self.clear()
            await asyncio.sleep(1)
