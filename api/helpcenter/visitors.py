"""The help center's visitors and what is kept of them (no Quart: the actor uses this too).

- Who: ``hc_visitor``, a cookie scoped to ``/hc/{org}``: ``random.YYYYMMDD.mac``, 32 random
  characters, the day it was made and an HMAC of both with ``FAQ_SECRET_KEY``
  (``new_visitor_token``). A cookie is a visitor only when we signed it (any key of a
  rotation) and its day is within its Max-Age (``valid_visitor_token``), so a loop of made-up
  cookies is one visitor: its address. Without a valid cookie, the client's address. Either
  is stored only as ``visitor_id``: an HMAC (``FAQ_SECRET_KEY``) of the org and the value, so
  no raw address or cookie value is kept and one visitor cannot be linked across orgs.
- Votes: one row per visitor per question in ``question_votes`` (``record_vote``: a second
  vote replaces the first).
- Views: each (question, visitor) of a day is a member of the org's per-day Redis set
  (``record_views``: TTL ``VIEW_SET_TTL_SECONDS``, at most ``MAX_VIEWS_PER_ORG_DAY``
  members, each the question and 16 hex of a visitor hash salted with the day), and the
  orgs with views that day are in a per-day index set. An address adds at most
  ``VIEWS_PER_ADDRESS_DAY`` members to an org's day (counted in a per-day hash of hashed
  addresses, same TTL): cookies gathered on one day are each a visitor the next, so without
  it one address could fill the org's cap or choose its popular questions. The actor counts
  the members into ``question_views_daily`` (``count_views``, ``store_view_counts``), so a
  visitor's views of a question on a day count once, however often the actor runs.
- CSRF: ``csrf_token`` binds a form to the visitor's cookie and, for a browser that keeps no
  cookie, to its address; ``csrf_valid`` checks the one the POST can show. A POST from
  another site is refused before the token is looked at (``api.helpcenter.feedback``): a
  forger behind the same address could make an address-bound token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import date
from functools import lru_cache

import redis.asyncio as aioredis
from sqlalchemy import (
    Boolean,
    Column,
    Date,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.visibility import Audiences, question_visible
from api.questions.models import Question
from api.questions.rules import LIVE, PUBLISHED
from tenancy.clock import utcnow
from tenancy.db import TENANT_SCHEMA_PLACEHOLDER
from tenancy.settings import Settings, get_settings

VISITOR_COOKIE = "hc_visitor"
VISITOR_COOKIE_MAX_AGE = 365 * 86_400  # a year from the first visit (set once)
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{32}\.[0-9]{8}\.[A-Za-z0-9_-]{22}$")
_COOKIE_MAC_BYTES = 16  # 128 bits, 22 base64url characters
_COOKIE_DAYS_AHEAD = 1  # made by a process whose clock is past midnight already
CSRF_MAX_AGE_SECONDS = 2 * 86_400
CLOCK_SKEW_SECONDS = 300  # a token made by another process whose clock is ahead
REASON_MAX = 500
VIEW_SET_TTL_SECONDS = 3 * 86_400  # the actor recounts today and yesterday, then it lapses
MAX_VIEWS_PER_ORG_DAY = 100_000  # distinct (question, visitor) pairs an org may add a day
STORE_BATCH = 1_000  # questions per statement of the aggregation
_VIEW_MEMBER_HEX = 16  # 64 bits of the visitor id per view member: enough within a question
# Counted views (new (question, visitor) members) one address adds to an org's day: a reader
# opens a few dozen questions, an office behind one address some hundreds.
VIEWS_PER_ADDRESS_DAY = 300

# Tables of tenant revision 0009, for statements only (their own metadata: not versioned, so
# a vote or a count never changes the org's content generation, and cached pages stay).
_tables = MetaData(schema=TENANT_SCHEMA_PLACEHOLDER)
question_votes = Table(
    "question_votes",
    _tables,
    Column("question_id", String(40), primary_key=True),
    Column("visitor", String(64), primary_key=True),
    Column("helpful", Boolean, nullable=False),
    Column("reason", String(500)),
    Column("locale", String(35), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)
question_views_daily = Table(
    "question_views_daily",
    _tables,
    Column("question_id", String(40), primary_key=True),
    Column("day", Date, primary_key=True),
    Column("views", Integer, nullable=False),
)


@lru_cache(maxsize=16)
def _key(secret: str, purpose: str) -> bytes:
    return hashlib.sha256(f"faq-help-center:{purpose}:{secret}".encode()).digest()


_signing: tuple[Settings, tuple[str, ...]] | None = None


def _cookie_keys() -> tuple[str, ...]:
    """``FAQ_SECRET_KEY``'s keys, newest first (read again when the settings are)."""
    global _signing
    settings = get_settings()
    if _signing is None or _signing[0] is not settings:
        _signing = (settings, tuple(settings.secret_keys()))
    return _signing[1]


def _cookie_mac(secret: str, signed: str) -> str:
    mac = _keyed(secret, "visitor-cookie").copy()
    mac.update(signed.encode())
    return base64.urlsafe_b64encode(mac.digest()[:_COOKIE_MAC_BYTES]).rstrip(b"=").decode()


def new_visitor_token(today: date) -> str:
    """``random.YYYYMMDD.mac``: 32 random characters, the day it was made (``view_visitor``),
    and an HMAC of both with the newest ``FAQ_SECRET_KEY``."""
    signed = f"{secrets.token_urlsafe(24)}.{today:%Y%m%d}"
    return f"{signed}.{_cookie_mac(_cookie_keys()[0], signed)}"


def valid_visitor_token(value: str | None) -> str | None:
    """The cookie's value when this service signed it (with any key of a rotation) on a day
    within the cookie's Max-Age, else None."""
    if value is None or not _TOKEN_RE.fullmatch(value):
        return None
    signed, _, mac = value.rpartition(".")
    try:
        issued = date(int(signed[-8:-4]), int(signed[-4:-2]), int(signed[-2:]))
    except ValueError:
        return None
    age = (utcnow().date() - issued).days
    if not -_COOKIE_DAYS_AHEAD <= age <= VISITOR_COOKIE_MAX_AGE // 86_400:
        return None
    ours = any(hmac.compare_digest(_cookie_mac(k, signed), mac) for k in _cookie_keys())
    return value if ours else None


@lru_cache(maxsize=16)
def _keyed(secret: str, purpose: str) -> hmac.HMAC:
    """HMAC-SHA256 keyed once; each use copies it (``hmac.digest`` with a digest name costs
    some 20 µs in a busy server: OpenSSL 3 fetches the digest on every call)."""
    return hmac.new(_key(secret, purpose), digestmod=hashlib.sha256)


def visitor_id(secret: str, org_id: str, *, token: str | None, address: str) -> str:
    """The stored visitor: an HMAC of the org and the cookie's value, else of the address."""
    value = f"c:{token.partition('.')[0]}" if token else f"a:{address}"
    mac = _keyed(secret, "visitor").copy()
    mac.update(f"{org_id}\x00{value}".encode())
    return mac.hexdigest()


def view_visitor(secret: str, org_id: str, *, token: str | None, address: str, today: date) -> str:
    """Who a page view is counted for. A browser's first page has no cookie yet and counts
    under its address; so do its other views of the day the cookie was made (else its first
    day would count twice), and every view of a client that keeps no cookie."""
    day = f"{today:%Y%m%d}"
    if token is not None and token.split(".")[1] == day:
        token = None
    # Salted with the day: a view member cannot be linked to the same visitor's other days.
    return visitor_id(secret, f"{org_id}\x00{day}", token=token, address=address)


def _mac(secret: str, org_id: str, issued: str, bound_to: str) -> str:
    message = f"{org_id}\x00{issued}\x00{bound_to}".encode()
    digest = hmac.digest(_key(secret, "csrf"), message, "sha256")[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def csrf_token(
    secret: str, org_id: str, *, token: str, address: str, now: float | None = None
) -> str:
    """``issued.mac(cookie).mac(address)``: valid ``CSRF_MAX_AGE_SECONDS``."""
    issued = str(int(now if now is not None else time.time()))
    by_cookie = _mac(secret, org_id, issued, f"c:{token}")
    by_address = _mac(secret, org_id, issued, f"a:{address}")
    return f"{issued}.{by_cookie}.{by_address}"


def csrf_valid(
    secrets_: Iterable[str],
    org_id: str,
    value: str,
    *,
    token: str | None,
    address: str,
    now: float | None = None,
) -> bool:
    """The form's token against the POST's cookie (SameSite=Lax: a cross-site POST carries
    none), else its address; any of the keys (``FAQ_SECRET_KEY`` during a rotation)."""
    parts = value.split(".")
    if len(parts) != 3 or not parts[0].isdigit():
        return False
    issued, by_cookie, by_address = parts
    age = (now if now is not None else time.time()) - int(issued)
    if not -CLOCK_SKEW_SECONDS <= age <= CSRF_MAX_AGE_SECONDS:
        return False
    expected_of, bound_to = (by_cookie, f"c:{token}") if token else (by_address, f"a:{address}")
    return any(
        hmac.compare_digest(_mac(secret, org_id, issued, bound_to), expected_of)
        for secret in secrets_
    )


async def published_question_id(
    session: AsyncSession, slug: str, audiences: Audiences = ()
) -> str | None:
    """The id of the published, live question with this slug that readers of ``audiences``
    may read (None: not one a reader sees; issue 39: the help center's anonymous reader by
    default)."""
    readable = (Question.status == PUBLISHED, question_visible(audiences))
    stmt = select(Question.id).where(LIVE, Question.slug == slug, *readable)
    return (await session.execute(stmt)).scalar_one_or_none()


async def record_vote(
    session: AsyncSession,
    *,
    question_id: str,
    visitor: str,
    helpful: bool,
    reason: str | None,
    locale: str,
) -> None:
    """One vote per visitor per question: a second one replaces the first (a reader may
    change their mind or correct a slip); the reason is kept on No only. The time is
    computed here: Citus refuses ``now()`` in ON CONFLICT DO UPDATE SET (issue 27)."""
    values = {
        "question_id": question_id,
        "visitor": visitor,
        "helpful": helpful,
        "reason": None if helpful else reason,
        "locale": locale,
        "created_at": utcnow(),
    }
    stmt = insert(question_votes).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[question_votes.c.question_id, question_votes.c.visitor],
        set_={
            "helpful": stmt.excluded.helpful,
            "reason": stmt.excluded.reason,
            "locale": stmt.excluded.locale,
            "created_at": stmt.excluded.created_at,
        },
    )
    await session.execute(stmt)


# ---- views --------------------------------------------------------------------------------


def views_key(org_id: str, day: date) -> str:
    return f"faq:hc:views:{org_id}:{day:%Y%m%d}"


def view_orgs_key(day: date) -> str:
    return f"faq:hc:views:orgs:{day:%Y%m%d}"


def view_addresses_key(org_id: str, day: date) -> str:
    """The org's day: counted views per hashed address (``view_address``)."""
    return f"faq:hc:views:by-address:{org_id}:{day:%Y%m%d}"


def view_member(question_id: str, visitor: str) -> str:
    return f"{question_id}:{visitor[:_VIEW_MEMBER_HEX]}"


def view_address(secret: str, org_id: str, *, address: str, today: date) -> str:
    """The address a view came from, as the per-address limit counts it: 64 bits of an HMAC
    salted with the org and the day, as ``view_visitor`` hashes a visitor without a cookie."""
    return view_visitor(secret, org_id, token=None, address=address, today=today)[:_VIEW_MEMBER_HEX]


# KEYS: the org's day set, the day's index of orgs, the org's day counts per address.
# ARGV: org id, cap, ttl, per-address limit, then pairs: member, hashed address.
RECORD_VIEWS = """
local room = tonumber(ARGV[2]) - redis.call('SCARD', KEYS[1])
local per_address = tonumber(ARGV[4])
local added = 0
for i = 5, #ARGV, 2 do
  if room <= 0 then break end
  local member, address = ARGV[i], ARGV[i + 1]
  if redis.call('SISMEMBER', KEYS[1], member) == 0
      and tonumber(redis.call('HGET', KEYS[3], address) or '0') < per_address then
    redis.call('SADD', KEYS[1], member)
    redis.call('HINCRBY', KEYS[3], address, 1)
    room = room - 1
    added = added + 1
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('EXPIRE', KEYS[3], ARGV[3]) end
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return added
"""


async def record_views(
    client: aioredis.Redis, org_id: str, day: date, members: Mapping[str, str]
) -> int:
    """Add one org's view members of a day (``{member: hashed address}``, one round trip):
    past the org's cap, or its address's ``VIEWS_PER_ADDRESS_DAY``, a view is not counted.
    Returns how many were new."""
    script = client.register_script(RECORD_VIEWS)
    args: list[str | int] = [
        org_id,
        MAX_VIEWS_PER_ORG_DAY,
        VIEW_SET_TTL_SECONDS,
        VIEWS_PER_ADDRESS_DAY,
    ]
    for member, address in members.items():
        args += (member, address)
    added = await script(
        keys=[views_key(org_id, day), view_orgs_key(day), view_addresses_key(org_id, day)],
        args=args,
    )
    return int(added)


async def orgs_with_views(client: aioredis.Redis, day: date) -> list[str]:
    members: set[bytes | str] = await client.smembers(view_orgs_key(day))  # type: ignore[misc]
    return sorted(m.decode() if isinstance(m, bytes) else m for m in members)


async def count_views(client: aioredis.Redis, org_id: str, day: date) -> Counter[str]:
    """Distinct visitors per question of one org's day (from its set)."""
    counts: Counter[str] = Counter()
    async for member in client.sscan_iter(views_key(org_id, day), count=1_000):
        question_id, _, _ = member.decode().rpartition(":")
        counts[question_id] += 1
    return counts


async def store_view_counts(session: AsyncSession, day: date, counts: Counter[str]) -> int:
    """Write a day's counts; a count never goes down (a recount after Redis lost the set
    keeps the higher one), so running twice changes nothing. Questions deleted since are
    skipped. ``STORE_BATCH`` questions per statement (bind parameters stay few). Returns the
    rows written."""
    ids = sorted(counts)
    written = 0
    for at in range(0, len(ids), STORE_BATCH):
        batch = ids[at : at + STORE_BATCH]
        existing = await session.execute(select(Question.id).where(Question.id.in_(batch)))
        rows = [{"question_id": q, "day": day, "views": counts[q]} for q in existing.scalars()]
        if not rows:
            continue
        stmt = insert(question_views_daily).values(rows)
        stmt = stmt.on_conflict_do_update(
            index_elements=[question_views_daily.c.question_id, question_views_daily.c.day],
            set_={"views": func.greatest(question_views_daily.c.views, stmt.excluded.views)},
        )
        await session.execute(stmt)
        written += len(rows)
    return written
