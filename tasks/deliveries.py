"""Sending webhook deliveries: signed afresh per attempt, retried, re-driven, never lost.

The delivery rows are the source of truth. The fan-out sends one ``deliveries.send_many``
message per webhook and up to SEND_BATCH new deliveries (``deliveries.send`` for one: retries,
re-drive, tests); both take ids and are idempotent:

1. Deliveries in flight per webhook are limited (``FAQ_WEBHOOK_MAX_IN_FLIGHT``): a short wait
   on an in-process semaphore, then Redis slots with a lease (across processes). One message
   per process sends to a webhook at a time; other messages for it hand over their ids to it
   and return. Without a slot the message comes back later (0.1 s, doubling while busy).
2. Waves of up to the limit: the claim (one conditional UPDATE for the wave in the common
   case, else the row ``FOR UPDATE SKIP LOCKED``) checks each is pending and due, and leases
   it: ``next_attempt_at`` moves to the end of the lease and a fresh ``lease_token`` names
   this attempt. A duplicate message finds it not due (or done) and stops.
3. The attempts, concurrently: resolve the host again, refuse non-public addresses, connect
   only to the addresses checked (a resolver that returns exactly those), SNI and ``Host``
   stay the URL's host, no redirects, total timeout ``FAQ_WEBHOOK_TIMEOUT_SECONDS``, at most
   2 KB of the response body read.
4. The record appends each attempt and, if the lease is still ours, schedules the retry (a
   delayed message after commit) or ends the delivery; the successes of a wave in one
   statement. Behind a receiver that answers quickly, the record of one wave and the claim of
   the next share one transaction, run while the wave between them is in flight.

A message holds its thread at most about BATCH_HOLD_SECONDS (then the rest is queued again),
and a send still waiting on its receiver after DETACH_AFTER_SECONDS finishes on the event loop
while its message returns: a receiver that times out holds no worker thread.

A worker that dies mid-attempt leaves the lease to expire (and ids handed over or detached
sends, the rows pending); the ``deliveries-redrive`` job finds pending deliveries overdue by
``FAQ_WEBHOOK_REDRIVE_AFTER_SECONDS`` through the small ``shared.delivery_schedule`` table
(one row per org with pending deliveries) and re-sends them.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import secrets
import socket
import ssl
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
import dramatiq
import redis.asyncio as aioredis
import structlog
from aiohttp.abc import AbstractResolver, ResolveResult
from cryptography.fernet import InvalidToken
from redis.exceptions import RedisError
from sqlalchemy import String, any_, bindparam, delete, func, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.webhooks.models import DELIVERIES as D
from api.webhooks.models import TS, Delivery, DeliverySchedule, Webhook
from api.webhooks.models import WEBHOOKS as W
from api.webhooks.service import mark_due, stop_pending_deliveries
from api.webhooks.signing import decrypt_secret, delivery_body, signed_request
from api.webhooks.url_safety import CheckedTarget, UnsafeUrl, resolve_checked
from tasks.db import worker_engine
from tasks.events import org_schema
from tasks.jobs import PeriodicJob, register
from tenancy.clock import iso, utcnow
from tenancy.db import shared_session, tenant_session
from tenancy.settings import Settings, get_settings
from tenancy.transactions import after_commit, commit

log = structlog.get_logger(__name__)

MAX_ATTEMPTS = 4  # the first attempt and 3 retries
RETRY_CAP_SECONDS = 3600.0
JITTER = 0.2
BODY_CAP_BYTES = 2048
DUE_TOLERANCE = timedelta(seconds=1)
BUSY_RETRY_SECONDS = 1.0
BUSY_RETRY_CAP_SECONDS = 30.0
# A webhook busy in this process is usually a fast one with more deliveries queued than its
# in-flight limit: try again soon, then back off (doubling) while it stays busy.
BUSY_FIRST_RETRY_SECONDS = 0.1
LOCAL_WAIT_SECONDS = 0.1
# A message of many deliveries stops taking new waves after this long (the rest goes back to
# the queue), so a slow receiver holds a worker thread for about one timeout at most.
BATCH_HOLD_SECONDS = 2.0
SEND_BATCH = 50
QUICK_WAVE_SECONDS = 0.5
DETACH_AFTER_SECONDS = 1.0
DB_GATE_DEFAULT = 5  # deliveries per fan-out message (one webhook)
REDRIVE_MAX_ORGS = 1000
REDRIVE_BATCH = 1000


# ---- per event loop: the HTTP client and the Redis client -----------------------------------

_target: contextvars.ContextVar[CheckedTarget | None] = contextvars.ContextVar(
    "webhook_target", default=None
)


class CheckedResolver(AbstractResolver):
    """Answers with the addresses this delivery checked, and nothing else: no second lookup
    that DNS rebinding could change between the check and the connection."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        target = _target.get()
        if target is None or target.host != host.lower():
            raise OSError(f"{host} was not checked for this delivery")
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in target.addresses
        ]

    async def close(self) -> None:
        return None


def _ssl_context(settings: Settings) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if settings.faq_webhook_ca_bundle:
        context.load_verify_locations(cafile=settings.faq_webhook_ca_bundle)
    return context


@dataclass
class LoopClients:
    http: aiohttp.ClientSession
    redis: aioredis.Redis
    acquire: Any  # the slot script, registered once (EVALSHA, not the script text per call)


_clients: dict[int, LoopClients] = {}


def _loop_clients(settings: Settings | None = None) -> LoopClients:
    loop_id = id(asyncio.get_running_loop())
    clients = _clients.get(loop_id)
    if clients is None or clients.http.closed:
        settings = settings or get_settings()
        connector = aiohttp.TCPConnector(
            resolver=CheckedResolver(),
            use_dns_cache=False,
            ssl=_ssl_context(settings),
            limit=0,
            limit_per_host=0,  # webhooks sharing a host must not queue behind each other
            keepalive_timeout=30,
        )
        redis = aioredis.Redis.from_url(settings.require_redis_url())
        clients = _clients[loop_id] = LoopClients(
            http=aiohttp.ClientSession(
                connector=connector, auto_decompress=False, raise_for_status=False
            ),
            redis=redis,
            acquire=redis.register_script(_ACQUIRE),
        )
    return clients


# ---- the in-flight limit per webhook -----------------------------------------------------------

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


def _slot_key(webhook_id: str) -> str:
    return f"faq:webhook-in-flight:{webhook_id}"


async def _acquire_slots(
    webhook_id: str, members: list[str], lease_seconds: float, release: list[str] | None = None
) -> int:
    """Take up to ``len(members)`` of the webhook's slots (across processes), each with a
    lease; returns how many were granted (the first ones of ``members``). ``release``: slots
    of this caller to give back first, in the same round trip."""
    release = release or []
    settings = get_settings()
    now_ms = int(time.time() * 1000)
    lease_ms = int(lease_seconds * 1000)
    granted = await _loop_clients().acquire(
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
    )
    return int(granted)


async def _acquire_slot(webhook_id: str, member: str, lease_seconds: float) -> bool:
    return await _acquire_slots(webhook_id, [member], lease_seconds) == 1


async def _release_slots(webhook_id: str, members: list[str]) -> None:
    if not members:
        return
    try:
        await _loop_clients().redis.zrem(_slot_key(webhook_id), *members)
    except RedisError:
        # The attempt is recorded already; the slot's lease lets it go by itself.
        log.warning("webhook_slot_release_failed", webhook_id=webhook_id)


async def _release_slot(webhook_id: str, member: str) -> None:
    await _release_slots(webhook_id, [member])


# ---- timing --------------------------------------------------------------------------------


def lease_seconds(settings: Settings) -> float:
    """How long an attempt may take before the re-drive may assume its worker is gone."""
    return settings.faq_webhook_timeout_seconds * 2 + 1


def retry_delay(retry_number: int, base: float) -> float:
    """Retry n waits about base x 2^(n-1), jitter at most ±20%, at most an hour."""
    delay: float = base * 2 ** (retry_number - 1) * random.uniform(1 - JITTER, 1 + JITTER)
    return min(delay, RETRY_CAP_SECONDS)


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """``Retry-After`` as seconds or an HTTP date, capped at an hour; None when absent/invalid."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), RETRY_CAP_SECONDS)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max((when - now).total_seconds(), 0.0), RETRY_CAP_SECONDS)


# ---- one attempt ---------------------------------------------------------------------------


@dataclass
class Claim:
    org_id: str
    delivery_id: str
    webhook_id: str
    event: str
    data: dict[str, Any]
    url: str
    secret_ciphertext: str
    token: str
    attempt_number: int


@dataclass
class Outcome:
    at: datetime
    status: int | None
    duration_ms: int
    error: str | None
    response_body: str | None
    retry_after: str | None
    body: dict[str, Any]

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def record(self) -> dict[str, Any]:
        return {
            "at": iso(self.at),
            "responseStatus": self.status,
            "durationMs": self.duration_ms,
            "error": self.error,
            "responseBody": self.response_body,
        }


def _lost_attempt(started_at: datetime | None) -> dict[str, Any]:
    return {
        "at": iso(started_at),
        "responseStatus": None,
        "durationMs": None,
        "error": "no result recorded: the worker stopped during the attempt",
        "responseBody": None,
    }


async def _claim_fast(
    session: AsyncSession, org_id: str, delivery_id: str, settings: Settings
) -> Claim | None:
    claims = await _claim_fast_many(session, org_id, [delivery_id], settings)
    return claims[0] if claims else None


async def _claim_fast_many(
    session: AsyncSession, org_id: str, delivery_ids: list[str], settings: Settings
) -> list[Claim]:
    claims = await _claim_rows(session, org_id, delivery_ids, settings)
    await commit(session)
    return claims


async def _claim_rows(
    session: AsyncSession, org_id: str, delivery_ids: list[str], settings: Settings
) -> list[Claim]:
    """The common case in one statement for a wave of deliveries (one webhook): pending, due,
    webhook not deleted, no lost attempt to write down. Each claimed row gets a fresh lease
    token naming this attempt (a random token per wave: it names one attempt of each row).
    Anything else (or a row another claim holds) goes the careful way, one by one. Does not
    commit."""
    now = utcnow()
    token = secrets.token_hex(8)
    rows = (
        await session.execute(
            update(D)
            .where(
                D.c.id == any_(bindparam("ids", delivery_ids, type_=ARRAY(String))),
                D.c.status == "pending",
                D.c.next_attempt_at <= now + DUE_TOLERANCE,
                D.c.attempt_count < MAX_ATTEMPTS,
                D.c.attempt_count == func.jsonb_array_length(D.c.attempts),
                W.c.id == D.c.webhook_id,
                W.c.deleted_at.is_(None),
            )
            .values(
                attempt_count=D.c.attempt_count + 1,
                lease_token=token,
                attempt_started_at=now,
                next_attempt_at=now + timedelta(seconds=lease_seconds(settings)),
                updated_at=now,
            )
            .returning(
                D.c.id,
                D.c.webhook_id,
                D.c.event,
                D.c.data,
                D.c.attempt_count,
                W.c.url,
                W.c.secret_ciphertext,
            )
        )
    ).all()
    by_id = {
        row.id: Claim(
            org_id=org_id,
            delivery_id=row.id,
            webhook_id=row.webhook_id,
            event=row.event,
            data=row.data,
            url=row.url,
            secret_ciphertext=row.secret_ciphertext,
            token=token,
            attempt_number=row.attempt_count,
        )
        for row in rows
    }
    return [by_id[i] for i in delivery_ids if i in by_id]


async def _claim(
    session: AsyncSession, org_id: str, delivery_id: str, settings: Settings
) -> Claim | None:
    row = (
        await session.execute(
            select(Delivery, Webhook)
            .join(Webhook, Webhook.id == Delivery.webhook_id)
            .where(Delivery.id == delivery_id)
            .with_for_update(of=Delivery, skip_locked=True)
        )
    ).first()
    if row is None:
        return None  # unknown, or another worker is claiming it right now
    delivery, webhook = row.tuple()
    now = utcnow()
    if delivery.status != "pending":
        return None
    if webhook.deleted_at is not None:
        await stop_pending_deliveries(session, webhook.id)
        await commit(session)
        return None
    if delivery.next_attempt_at is not None and delivery.next_attempt_at > now + DUE_TOLERANCE:
        return None  # leased by an attempt in flight, or a retry not yet due
    attempts = list(delivery.attempts)
    if delivery.attempt_count > len(attempts):
        attempts.append(_lost_attempt(delivery.attempt_started_at))
    values: dict[str, Any] = {"attempts": attempts, "updated_at": now}
    if delivery.attempt_count >= MAX_ATTEMPTS:
        values.update(status="failed", next_attempt_at=None, lease_token=None)
        await session.execute(update(Delivery).where(Delivery.id == delivery.id).values(**values))
        await commit(session)
        return None
    token = secrets.token_hex(8)
    values.update(
        attempt_count=delivery.attempt_count + 1,
        lease_token=token,
        attempt_started_at=now,
        next_attempt_at=now + timedelta(seconds=lease_seconds(settings)),
    )
    await session.execute(update(Delivery).where(Delivery.id == delivery.id).values(**values))
    await commit(session)
    return Claim(
        org_id=org_id,
        delivery_id=delivery.id,
        webhook_id=webhook.id,
        event=delivery.event,
        data=delivery.data,
        url=webhook.url,
        secret_ciphertext=webhook.secret_ciphertext,
        token=token,
        attempt_number=delivery.attempt_count + 1,
    )


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    """At most BODY_CAP_BYTES of the body: a 1 GB answer is never read whole."""
    data = b""
    while len(data) < BODY_CAP_BYTES:
        chunk = await response.content.read(BODY_CAP_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    return data


async def attempt(claim: Claim, settings: Settings) -> Outcome:
    """One signed POST. Never raises for the receiver's faults: they become the outcome."""
    signed_at = utcnow()
    try:
        secret = decrypt_secret(claim.secret_ciphertext)
        raw, headers, body = signed_request(
            secret, claim.delivery_id, claim.event, claim.data, signed_at
        )
    except (InvalidToken, ValueError) as exc:
        # FAQ_SECRET_KEY changed, or a corrupt row: nothing may be sent unsigned.
        return Outcome(
            at=signed_at,
            status=None,
            duration_ms=0,
            error=f"cannot sign the delivery: {type(exc).__name__}",
            response_body=None,
            retry_after=None,
            body=delivery_body(claim.delivery_id, claim.event, claim.data, signed_at),
        )
    timeout = settings.faq_webhook_timeout_seconds
    started = time.monotonic()
    status: int | None = None
    error: str | None = None
    response_body: bytes | None = None
    retry_after: str | None = None
    try:
        async with asyncio.timeout(timeout):
            target = await resolve_checked(
                claim.url, allow_private=settings.faq_webhook_allow_private_networks
            )
            reset = _target.set(target)
            try:
                async with _loop_clients(settings).http.post(
                    claim.url, data=raw, headers=headers, allow_redirects=False
                ) as response:
                    status = response.status
                    retry_after = response.headers.get("Retry-After")
                    response_body = await _read_capped(response)
            finally:
                _target.reset(reset)
    except UnsafeUrl as exc:
        error = f"refused: {exc}"
    except TimeoutError:
        if status is None:
            error = f"no response within {timeout:g} seconds"
        else:
            error = "the response body did not arrive within the timeout"
    except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    if status is not None and 300 <= status < 400:
        error = error or "redirects are not followed"
    elif status is not None and not 200 <= status < 300:
        error = error or f"the receiver answered {status}"
    return Outcome(
        at=signed_at,
        status=status,
        duration_ms=int((time.monotonic() - started) * 1000),
        error=error,
        response_body=response_body.decode("utf-8", "replace") if response_body else None,
        retry_after=retry_after,
        body=body,
    )


def _send_later(session: AsyncSession, claim: Claim, delay_seconds: float) -> None:
    def send() -> None:
        send_delivery.send_with_options(
            args=(claim.org_id, claim.delivery_id, claim.webhook_id),
            delay=max(int(delay_seconds * 1000), 0),
        )

    # One key per delivery: a wave's record may schedule several retries in one transaction.
    after_commit(session, f"deliveries.retry:{claim.delivery_id}", send)


def _appended(outcome: Outcome) -> Any:
    return D.c.attempts.op("||", return_type=JSONB)(
        bindparam(None, [outcome.record()], type_=JSONB)
    )


async def _record(session: AsyncSession, claim: Claim, outcome: Outcome, settings: Settings) -> str:
    result = await _decide(session, claim, outcome, settings)
    await commit(session)
    return result


# Every success of a wave in one statement (the common case): append the attempt, keep the
# body sent, end the delivery. Rows no longer pending are left out (recorded one by one).
_SUCCEEDED = text(
    """UPDATE deliveries AS d
SET attempts = d.attempts || jsonb_build_array(v.attempt), payload = v.payload,
    status = 'succeeded', next_attempt_at = NULL, lease_token = NULL, updated_at = :now
FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS v(id text, attempt jsonb, payload jsonb)
WHERE d.id = v.id AND d.status = 'pending'
RETURNING d.id"""
).bindparams(bindparam("rows", type_=JSONB), bindparam("now", type_=TS))


async def _record_many(
    session: AsyncSession, done: list[tuple[Claim, Outcome]], settings: Settings
) -> dict[str, str]:
    """Record a wave's attempts in one transaction (the caller's session); commits."""
    results = await _record_rows(session, done, settings)
    await commit(session)
    return results


async def _record_rows(
    session: AsyncSession, done: list[tuple[Claim, Outcome]], settings: Settings
) -> dict[str, str]:
    """Record a wave's attempts: the successes in one statement. Does not commit."""
    results: dict[str, str] = {}
    succeeded = [(c, o) for c, o in done if o.succeeded]
    if succeeded:
        now = utcnow()
        rows = [
            {"id": c.delivery_id, "attempt": o.record(), "payload": o.body} for c, o in succeeded
        ]
        decided = set((await session.execute(_SUCCEEDED, {"rows": rows, "now": now})).scalars())
        for claim, outcome in succeeded:
            if claim.delivery_id in decided:
                results[claim.delivery_id] = "succeeded"
            else:
                results[claim.delivery_id] = await _decide(session, claim, outcome, settings)
    for claim, outcome in done:
        if not outcome.succeeded:
            results[claim.delivery_id] = await _decide(session, claim, outcome, settings)
    return results


async def _decide(session: AsyncSession, claim: Claim, outcome: Outcome, settings: Settings) -> str:
    """Append the attempt; if the lease is still ours, decide what comes next. A success is a
    success whoever holds the lease; a failure decides nothing once another attempt took over.
    Does not commit."""
    now = utcnow()
    values: dict[str, Any] = {
        "attempts": _appended(outcome),
        "payload": outcome.body,
        "updated_at": now,
    }
    condition = [D.c.id == claim.delivery_id, D.c.status == "pending"]
    next_at: datetime | None = None
    delay = 0.0
    if outcome.succeeded:
        values.update(status="succeeded", next_attempt_at=None, lease_token=None)
        result = "succeeded"
    else:
        condition.append(D.c.lease_token == claim.token)
        if outcome.status == 410 or claim.attempt_number >= MAX_ATTEMPTS:
            values.update(status="failed", next_attempt_at=None, lease_token=None)
            result = "gone" if outcome.status == 410 else "failed"
        else:
            waited = None
            if outcome.status in (429, 503):
                waited = retry_after_seconds(outcome.retry_after, now)
            delay = (
                waited
                if waited is not None
                else retry_delay(claim.attempt_number, settings.faq_webhook_retry_base_seconds)
            )
            next_at = now + timedelta(seconds=delay)
            values.update(next_attempt_at=next_at, lease_token=None)
            result = "retry"
    decided = (
        await session.execute(update(D).where(*condition).values(**values).returning(D.c.id))
    ).first()
    if decided is None:
        # Ended meanwhile (webhook deleted, a 410) or another attempt holds the lease.
        await session.execute(
            update(D)
            .where(D.c.id == claim.delivery_id)
            .values(attempts=_appended(outcome), updated_at=now)
        )
        result = "superseded"
    elif result == "gone":
        await session.execute(
            update(W).where(W.c.id == claim.webhook_id).values(active=False, updated_at=now)
        )
        await stop_pending_deliveries(session, claim.webhook_id)
    elif next_at is not None:
        await mark_due(session, claim.org_id, next_at)
        _send_later(session, claim, delay)
    return result


async def _postpone_due(
    session: AsyncSession, delivery_ids: list[str], seconds: float
) -> list[str]:
    """No slot free: push due deliveries back a little (so the re-drive leaves them alone);
    returns those moved (the others are done, or leased by an attempt in flight)."""
    later = utcnow() + timedelta(seconds=seconds)
    moved = await session.execute(
        update(D)
        .where(
            D.c.id == any_(bindparam("ids", delivery_ids, type_=ARRAY(String))),
            D.c.status == "pending",
            D.c.next_attempt_at <= utcnow() + DUE_TOLERANCE,
        )
        .values(next_attempt_at=later)
        .returning(D.c.id)
    )
    found = set(moved.scalars())
    await commit(session)
    return [i for i in delivery_ids if i in found]


async def _postpone_if_due(session: AsyncSession, delivery_id: str, seconds: float) -> bool:
    return bool(await _postpone_due(session, [delivery_id], seconds))


async def close_loop_clients() -> None:
    """Close this event loop's HTTP and Redis clients (tests, shutdown)."""
    clients = _clients.pop(id(asyncio.get_running_loop()), None)
    if clients is not None:
        await clients.http.close()
        await clients.redis.aclose()


_local_slots: dict[tuple[int, str], asyncio.Semaphore] = {}


def _local_slot(webhook_id: str, limit: int) -> asyncio.Semaphore:
    """In this process, deliveries to one webhook wait here briefly for their turn (cheaper
    than bouncing); the Redis slot then holds the limit across processes."""
    key = (id(asyncio.get_running_loop()), webhook_id)
    slot = _local_slots.get(key)
    if slot is None:
        slot = _local_slots[key] = asyncio.Semaphore(limit)
    return slot


async def _take_local(slot: asyncio.Semaphore, wanted: int) -> int:
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


def _busy_delay(busy: int) -> float:
    """Waits grow while a webhook stays busy (a receiver that times out keeps its slots for
    FAQ_WEBHOOK_TIMEOUT_SECONDS): its waiting deliveries do not bounce through the queue and
    the database every second, which would cost the healthy receivers."""
    delay: float = min(BUSY_FIRST_RETRY_SECONDS * 2.0**busy, BUSY_RETRY_CAP_SECONDS)
    return delay * random.uniform(1, 1.5)


async def _busy(
    engine: AsyncEngine,
    schema: str,
    org_id: str,
    delivery_ids: list[str],
    webhook_id: str,
    busy: int = 0,
) -> list[str]:
    """No slot: postpone the due ones and send them again later; returns those postponed."""
    delay = _busy_delay(busy)
    if delay < BUSY_RETRY_SECONDS:
        # A short wait: no need to move the rows (the re-drive looks a minute back).
        await asyncio.to_thread(
            send_deliveries.send_with_options,
            args=(org_id, webhook_id, delivery_ids),
            kwargs={"busy": busy + 1},
            delay=int(delay * 1000),
        )
        return delivery_ids
    log.debug("deliveries_busy", webhook_id=webhook_id, deliveries=len(delivery_ids), busy=busy)
    async with _session(engine, schema) as session:
        moved = await _postpone_due(session, delivery_ids, delay)
    if moved:
        await asyncio.to_thread(
            send_deliveries.send_with_options,
            args=(org_id, webhook_id, moved),
            kwargs={"busy": busy + 1},
            delay=int(delay * 1000),
        )
    return moved


_db_gates: dict[int, asyncio.Semaphore] = {}
# Per event loop and webhook: the deliveries still to send by the message sending to it now.
_inboxes: dict[tuple[int, str], list[str]] = {}


@asynccontextmanager
async def _session(engine: AsyncEngine, schema: str) -> AsyncIterator[AsyncSession]:
    """A tenant session for the delivery paths, at most as many at once as the engine's pool
    holds: more would open (and close again) an overflow connection per transaction, which
    costs far more than waiting a moment for a pooled one."""
    key = id(engine)
    gate = _db_gates.get(key)
    if gate is None:
        size = getattr(engine.pool, "size", lambda: DB_GATE_DEFAULT)()
        gate = _db_gates[key] = asyncio.Semaphore(max(int(size) - 1, 1))
    async with gate, tenant_session(engine, schema) as session:
        yield session


async def _attempt_all(claims: list[Claim], settings: Settings) -> list[tuple[Claim, Outcome]]:
    if not claims:
        return []
    if len(claims) == 1:
        return [(claims[0], await attempt(claims[0], settings))]
    outcomes = await asyncio.gather(*(attempt(c, settings) for c in claims))
    return list(zip(claims, outcomes, strict=True))


async def _record_and_claim(
    engine: AsyncEngine,
    schema: str,
    org_id: str,
    done: list[tuple[Claim, Outcome]],
    wave: list[str],
    settings: Settings,
) -> tuple[dict[str, str], list[Claim]]:
    """One transaction: record the previous wave's attempts, then claim the next wave. Rows
    the common claim leaves out go the careful way, one transaction each."""
    try:
        async with _session(engine, schema) as session:
            recorded = await _record_rows(session, done, settings) if done else {}
            claims = await _claim_rows(session, org_id, wave, settings)
            await commit(session)
    except Exception:
        if done:  # the claim failed: the records must not go with it
            async with _session(engine, schema) as session:
                await _record_many(session, done, settings)
        raise
    claimed = {c.delivery_id for c in claims}
    for delivery_id in wave:
        if delivery_id not in claimed:
            async with _session(engine, schema) as session:
                claim = await _claim(session, org_id, delivery_id, settings)
            if claim is not None:
                claims.append(claim)
    return recorded, claims


async def _unclaim(engine: AsyncEngine, schema: str, claims: list[Claim]) -> None:
    """Give back leases of claims never sent (an error before the send): the rows are due
    again, as if never claimed (no attempt was made, so none is recorded)."""
    now = utcnow()
    async with _session(engine, schema) as session:
        for claim in claims:
            await session.execute(
                update(D)
                .where(
                    D.c.id == claim.delivery_id,
                    D.c.status == "pending",
                    D.c.lease_token == claim.token,
                )
                .values(
                    attempt_count=D.c.attempt_count - 1,
                    lease_token=None,
                    next_attempt_at=now,
                    updated_at=now,
                )
            )
        await commit(session)


async def deliver_many(
    engine: AsyncEngine,
    org_id: str,
    webhook_id: str,
    delivery_ids: list[str],
    *,
    busy: int = 0,
) -> dict[str, str]:
    """Attempt deliveries of one webhook that are pending and due. This message takes as many
    of the webhook's in-flight slots as it can use (``FAQ_WEBHOOK_MAX_IN_FLIGHT``, in this
    process and across processes) and sends in waves of that size: each wave claimed in one
    statement and sent concurrently; while a wave is in flight, one transaction records the
    previous wave and claims the next. Returns what happened to each. Deliveries without a
    slot are postponed and sent again later in one message; those left when this message has
    held its thread for BATCH_HOLD_SECONDS go back to the queue at once. While one message
    sends to a webhook, other messages for it in this process hand it their deliveries and
    return (instead of waiting for a slot or bouncing through the queue)."""
    schema = await org_schema(engine, org_id)
    if schema is None:
        return dict.fromkeys(delivery_ids, "unknown-org")
    results: dict[str, str] = {}
    key = (id(asyncio.get_running_loop()), webhook_id)
    inbox = _inboxes.get(key)
    if inbox is not None:
        # This process is sending to the webhook right now: add these to its list (a message
        # lost with the process leaves the rows due: the re-drive sends them).
        known = set(inbox)
        inbox.extend(i for i in dict.fromkeys(delivery_ids) if i not in known)
        return dict.fromkeys(delivery_ids, "handed-over")
    remaining = list(dict.fromkeys(delivery_ids))
    _inboxes[key] = remaining
    try:
        return await _run_deliveries(engine, schema, org_id, webhook_id, remaining, busy, results)
    finally:
        if _inboxes.get(key) is remaining:
            del _inboxes[key]


async def _run_deliveries(
    engine: AsyncEngine,
    schema: str,
    org_id: str,
    webhook_id: str,
    remaining: list[str],
    busy: int,
    results: dict[str, str],
) -> dict[str, str]:
    """The body of ``deliver_many`` for the one message sending to the webhook in this
    process; ``remaining`` is its inbox: other messages for the webhook add to it meanwhile."""
    settings = get_settings()
    key = (id(asyncio.get_running_loop()), webhook_id)
    limit = settings.faq_webhook_max_in_flight
    local = _local_slot(webhook_id, limit)
    deadline = time.monotonic() + BATCH_HOLD_SECONDS
    taken = await _take_local(local, min(len(remaining), limit))
    held: list[str] = []
    done: list[tuple[Claim, Outcome]] = []  # attempted, not recorded yet
    claims: list[Claim] = []  # claimed, not sent yet
    try:
        if taken:
            candidates = [f"{i}:{secrets.token_hex(4)}" for i in remaining[:taken]]
            granted = await _acquire_slots(webhook_id, candidates, lease_seconds(settings))
            held = candidates[:granted]
        if not held:
            if _inboxes.get(key) is remaining:
                del _inboxes[key]
            bounced = list(remaining)
            moved = await _busy(engine, schema, org_id, bounced, webhook_id, busy)
            results.update(dict.fromkeys(bounced, "not-due"))
            results.update(dict.fromkeys(moved, "busy"))
            return results
        if granted < taken:  # fewer across processes: give back the permits not needed
            for _ in range(taken - granted):
                local.release()
            taken = granted
        size = len(held)
        quick = False  # the last wave came back within QUICK_WAVE_SECONDS
        while True:
            if not claims:
                if not remaining or time.monotonic() >= deadline:
                    break
                pending, done = done, []
                wave = remaining[:size]
                del remaining[:size]
                results.update(dict.fromkeys(wave, "not-due"))
                recorded, claims = await _record_and_claim(
                    engine, schema, org_id, pending, wave, settings
                )
                results.update(recorded)
                continue
            sending, claims = claims[:size], claims[size:]
            posts = asyncio.ensure_future(_attempt_all(sending, settings))
            sent_at = time.monotonic()
            try:
                # Only behind a receiver that answered the last wave quickly: a lease taken now
                # must not wait out a slow wave (and this message must not hold its thread).
                if remaining and not claims and quick and sent_at < deadline:
                    # Overlapped with the wave in flight: record the last, claim the next.
                    pending, done = done, []
                    wave = remaining[:size]
                    del remaining[:size]
                    results.update(dict.fromkeys(wave, "not-due"))
                    recorded, claims = await _record_and_claim(
                        engine, schema, org_id, pending, wave, settings
                    )
                    results.update(recorded)
                elif done:
                    pending, done = done, []
                    async with _session(engine, schema) as session:
                        results.update(await _record_many(session, pending, settings))
            finally:
                # Whatever happened meanwhile, the wave in flight is awaited (and recorded).
                done = await posts
                quick = time.monotonic() - sent_at < QUICK_WAVE_SECONDS
    finally:
        if _inboxes.get(key) is remaining:
            del _inboxes[key]  # no more additions: what is left is sent again below
        await _release_slots(webhook_id, held)
        for _ in range(taken):
            local.release()
        try:
            if claims:
                await _unclaim(engine, schema, claims)
        finally:
            if done:
                async with _session(engine, schema) as session:
                    results.update(await _record_many(session, done, settings))
    if remaining:
        # Held the thread long enough (a slow receiver): the rest waits in the queue, at once.
        left = list(remaining)
        await asyncio.to_thread(send_after_commit_messages, org_id, [(i, webhook_id) for i in left])
        results.update(dict.fromkeys(left, "requeued"))
    return results


async def deliver(engine: AsyncEngine, org_id: str, delivery_id: str, webhook_id: str) -> str:
    """Make one attempt of a delivery if it is pending and due; returns what happened."""
    results = await deliver_many(engine, org_id, webhook_id, [delivery_id])
    return results.get(delivery_id, "not-due")


@dramatiq.actor(
    actor_name="deliveries.send",
    max_retries=10,
    min_backoff=1_000,
    max_backoff=60_000,
    time_limit=15 * 60 * 1000,
)
async def send_delivery(org_id: str, delivery_id: str, webhook_id: str) -> None:
    await _detaching(deliver(worker_engine(), org_id, delivery_id, webhook_id))


@dramatiq.actor(
    actor_name="deliveries.send_many",
    max_retries=10,
    min_backoff=1_000,
    max_backoff=60_000,
    time_limit=15 * 60 * 1000,
)
async def send_deliveries(
    org_id: str, webhook_id: str, delivery_ids: list[str], busy: int = 0
) -> None:
    """Deliveries of one webhook (the fan-out sends up to SEND_BATCH per message)."""
    await _detaching(deliver_many(worker_engine(), org_id, webhook_id, delivery_ids, busy=busy))


# Sends still running on the loop after their message returned (a slow receiver).
_detached: set[asyncio.Future[Any]] = set()


def _log_detached(task: asyncio.Future[Any]) -> None:
    _detached.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("detached_delivery_failed", exc_info=task.exception())


async def _detaching(work: Coroutine[Any, Any, Any]) -> None:
    """Run ``work``; if it is still waiting on a receiver after DETACH_AFTER_SECONDS, let it
    finish on the event loop and return, so a receiver that times out holds no worker thread
    (threads bound how many messages run at once). At least once still holds: the rows are
    the truth, and what a killed worker leaves (leased or due) is re-driven."""
    task = asyncio.ensure_future(work)
    finished, _ = await asyncio.wait({task}, timeout=DETACH_AFTER_SECONDS)
    if finished:
        task.result()
        return
    _detached.add(task)
    task.add_done_callback(_log_detached)


async def wait_detached(seconds: float) -> None:
    """Shutdown: let detached sends finish (their attempts recorded) before clients close."""
    if _detached:
        await asyncio.wait(set(_detached), timeout=seconds)


def send_after_commit_messages(org_id: str, pairs: list[tuple[str, str]]) -> None:
    """Send the messages for new deliveries ``(delivery_id, webhook_id)``: one per webhook and
    SEND_BATCH deliveries (one ``deliveries.send`` for a single delivery)."""
    by_webhook: dict[str, list[str]] = {}
    for delivery_id, webhook_id in pairs:
        by_webhook.setdefault(webhook_id, []).append(delivery_id)
    for webhook_id, ids in by_webhook.items():
        for start in range(0, len(ids), SEND_BATCH):
            chunk = ids[start : start + SEND_BATCH]
            if len(chunk) == 1:
                send_delivery.send(org_id, chunk[0], webhook_id)
            else:
                send_deliveries.send(org_id, webhook_id, chunk)


# ---- the re-drive --------------------------------------------------------------------------


async def _redrive_org(engine: AsyncEngine, org_id: str, cutoff: datetime) -> int:
    schema = await org_schema(engine, org_id)
    if schema is None:
        return 0
    async with tenant_session(engine, schema) as session:
        marker = (
            await session.execute(
                select(DeliverySchedule)
                .where(DeliverySchedule.org_id == org_id)
                .with_for_update(skip_locked=True)
            )
        ).scalar_one_or_none()
        if marker is None:
            return 0
        overdue = (
            await session.execute(
                select(Delivery.id, Delivery.webhook_id)
                .where(Delivery.status == "pending", Delivery.next_attempt_at < cutoff)
                .order_by(Delivery.next_attempt_at)
                .limit(REDRIVE_BATCH)
            )
        ).all()
        now = utcnow()
        if overdue:
            await session.execute(
                update(Delivery)
                .where(Delivery.id.in_([d.id for d in overdue]))
                .values(next_attempt_at=now)
            )
        earliest = (
            await session.execute(
                select(func.min(Delivery.next_attempt_at)).where(Delivery.status == "pending")
            )
        ).scalar_one_or_none()
        if earliest is None:
            await session.execute(delete(DeliverySchedule).where(DeliverySchedule.org_id == org_id))
        else:
            await session.execute(
                update(DeliverySchedule)
                .where(DeliverySchedule.org_id == org_id)
                .values(next_due_at=earliest)
            )

        def send() -> None:
            for d in overdue:
                send_delivery.send(org_id, d.id, d.webhook_id)

        after_commit(session, "deliveries.redrive", send)
        await commit(session)
    return len(overdue)


async def redrive_overdue() -> int:
    """The periodic job: re-send pending deliveries whose attempt is overdue (lost message,
    worker killed mid-attempt). Reads only the orgs the schedule table names as due."""
    engine = worker_engine()
    cutoff = utcnow() - timedelta(seconds=get_settings().faq_webhook_redrive_after_seconds)
    async with shared_session(engine) as session:
        org_ids = list(
            (
                await session.execute(
                    select(DeliverySchedule.org_id)
                    .where(DeliverySchedule.next_due_at < cutoff)
                    .order_by(DeliverySchedule.next_due_at)
                    .limit(REDRIVE_MAX_ORGS)
                )
            ).scalars()
        )
    redriven = 0
    for org_id in org_ids:
        redriven += await _redrive_org(engine, org_id, cutoff)
    if redriven:
        log.info("deliveries_redriven", deliveries=redriven, orgs=len(org_ids))
    return redriven


@dramatiq.actor(actor_name="deliveries.redrive", max_retries=0)
async def redrive_deliveries() -> None:
    await redrive_overdue()


register(
    PeriodicJob(
        name="deliveries-redrive",
        run=redrive_overdue,
        actor=redrive_deliveries,
        period_seconds=lambda: get_settings().faq_outbox_sweep_seconds,
    )
)
