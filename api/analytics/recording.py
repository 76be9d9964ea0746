"""Content analytics, the recording side (issue 17; no Quart: the routes and the actor use it).

- A search: each search of a reader through the help center's search page or a publishable
  key's ``GET /questions?q=`` (first page only; never a secret key's), with its normalised
  query (``normalise_query``), locale, result count (the results shown; the API: the items of
  the first page), hashed visitor and time. An empty query is not a search.
- A click: the first question the same visitor opens (a help-center question page, or a
  publishable key's single read) within ``CLICK_WINDOW_SECONDS`` after a search and before
  another one is that search's ``clicked_question_id``.
- Visitors: ``visitor_hash``, an HMAC (a key derived from ``FAQ_SECRET_KEY``) of the day, the
  org and the raw visitor (the help center: its ``hc_visitor`` cookie else its address; the API:
  the key's fingerprint and the client address). The salt is the day, so one visitor cannot be
  followed from one day to the next; nothing raw is kept, in PostgreSQL or Redis.
- Off the request path: a request only appends to its process's ``Recorder`` (no I/O); every
  ``FLUSH_SECONDS`` (and at shutdown) the buffer goes to Redis in one script call per org
  (``RECORD``), which appends the searches to the org's list, keeps each visitor's last search
  (``faq:an:last:*``, TTL ``CLICK_WINDOW_SECONDS``; a search that found nothing clears it)
  and turns an open after it into a click (get-and-delete: only the first open counts). An
  org adds at most ``MAX_SEARCHES_PER_ORG_DAY`` searches a day; keys live
  ``EVENT_TTL_SECONDS``.
- Audiences (issue 39): a search and an open carry the reader's audiences (``audiences_of``:
  the slugs of a publishable key's signed-in reader, sorted; ``()`` for an anonymous reader).
  A search keeps them in its payload; an open adds one member per audience (``''`` when
  none), ``question audience visitor``, to the org's per-day set of audience views
  (``audience_views_key``: distinct readers per question and audience a day; at most
  ``MAX_AUDIENCE_VIEWS_PER_ORG_DAY`` members, TTL ``EVENT_TTL_SECONDS``).
- ``tasks/analytics.py`` (``analytics-collect``) moves the lists into ``search_events`` and
  counts the audience views (``api.analytics.by_audience``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
import unicodedata
from collections.abc import Callable, MutableMapping
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any

import orjson
import redis.asyncio as aioredis
import structlog
from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table
from sqlalchemy.dialects.postgresql import ARRAY
from ulid import ULID

from tenancy.db import TENANT_SCHEMA_PLACEHOLDER
from tenancy.principal import Principal
from tenancy.redis import loop_client

log = structlog.get_logger(__name__)

MAX_QUERY = 200
CLICK_WINDOW_SECONDS = 30 * 60
MAX_SEARCHES_PER_ORG_DAY = 50_000  # searches an org may add a day (Redis stays bounded)
EVENT_TTL_SECONDS = 3 * 86_400  # recorded but not collected: lapses after this
FLUSH_SECONDS = 1.0
MAX_PENDING = 50_000  # events per process between two flushes: past it one is dropped
MAX_AUDIENCE_VIEWS_PER_ORG_DAY = 100_000  # (question, audience, reader) members a day
_VISITOR_IN_VIEW = 16  # hex of the day-salted visitor hash in an audience view member
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
HELP_CENTER = "help_center"
API = "api"
EXTENSION = "analytics_recorder"
SIGNING = "analytics_signing"

# Table of tenant revision 0010, for statements only (not versioned content).
_tables = MetaData(schema=TENANT_SCHEMA_PLACEHOLDER)
search_events = Table(
    "search_events",
    _tables,
    Column("id", String(40), primary_key=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("source", String(16), nullable=False),
    Column("locale", String(35), nullable=False),
    Column("query", String(200), nullable=False),
    Column("results", Integer, nullable=False),
    Column("visitor", String(64), nullable=False),
    Column("clicked_question_id", String(40)),
    Column("audiences", ARRAY(String(100)), nullable=False),  # revision 0020
)


def now() -> float:
    """The time of an event (tests move it)."""
    return time.time()


def normalise_query(text: str) -> str:
    """NFKC, case-folded, whitespace runs collapsed, trimmed, at most ``MAX_QUERY`` chars."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())[:MAX_QUERY].strip()


@lru_cache(maxsize=8)
def _keyed(secret: str) -> hmac.HMAC:
    """HMAC-SHA256 keyed once (a key derived from the secret); each hash copies it. A copy
    costs about a microsecond, ``hmac.digest`` with a digest name some 20 in a busy server
    (OpenSSL 3 fetches the digest on every call)."""
    key = hashlib.sha256(f"faq-analytics:visitor:{secret}".encode()).digest()
    return hmac.new(key, digestmod=hashlib.sha256)


def visitor_hash(secret: str, org_id: str, raw: str, day: date) -> str:
    """The stored visitor: 32 hex of an HMAC of the day, the org and the raw visitor."""
    return _hash(secret, f"{day:%Y%m%d}", org_id, raw)


def _hash(secret: str, day_tag: str, org_id: str, raw: str) -> str:
    mac = _keyed(secret).copy()
    mac.update(f"{day_tag}\x00{org_id}\x00{raw}".encode())
    return mac.hexdigest()[:32]


@lru_cache(maxsize=4)
def _day_tag(day_number: int) -> str:
    """``YYYYMMDD`` of a UTC day (days since the epoch): formatted once a day, not per request."""
    return f"{datetime.fromtimestamp(day_number * 86_400, UTC):%Y%m%d}"


def _day(at: float) -> date:
    return datetime.fromtimestamp(at, UTC).date()


def help_center_visitor(cookie: str | None, address: str) -> str:
    """A help-center reader, raw: its ``hc_visitor`` cookie (the random part), else its
    address (hashed by ``stamp`` before it goes anywhere)."""
    return f"c:{cookie.partition('.')[0]}" if cookie else f"a:{address}"


def api_visitor(fingerprint: str, address: str) -> str:
    """A publishable key's reader, raw: the key's fingerprint and the client's address."""
    return f"k:{fingerprint}:{address}"


def audiences_of(principal: Principal) -> tuple[str, ...]:
    """The audiences an event of ``principal`` is counted under: its signed-in reader's slugs,
    sorted, else ``()`` (an anonymous reader; a secret key's reads are never recorded)."""
    reader = principal.reader
    return tuple(sorted(set(reader.audiences))) if reader is not None else ()


def enabled(extensions: MutableMapping[str, Any]) -> bool:
    """``FAQ_CONTENT_ANALYTICS`` of the app (its ``extensions``)."""
    return bool(extensions["settings"].faq_content_analytics)


def stamp(extensions: MutableMapping[str, Any], org_id: str, raw: str) -> tuple[str, float]:
    """The hashed visitor of ``raw`` now, and now."""
    secret: str | None = extensions.get(SIGNING)
    if secret is None:
        secret = extensions[SIGNING] = extensions["settings"].require_secret_key()
    at = now()
    return _hash(secret, _day_tag(int(at // 86_400)), org_id, raw), at


# ---- Redis keys ---------------------------------------------------------------------------


def searches_key(org_id: str) -> str:
    return f"faq:an:searches:{org_id}"


def clicks_key(org_id: str) -> str:
    return f"faq:an:clicks:{org_id}"


def count_key(org_id: str, day: date) -> str:
    return f"faq:an:count:{org_id}:{day:%Y%m%d}"


def orgs_key(day: date) -> str:
    """The orgs with searches or votes that day (the collect job aggregates them)."""
    return f"faq:an:orgs:{day:%Y%m%d}"


def last_search_prefix(org_id: str) -> str:
    return f"faq:an:last:{org_id}:"


def audience_views_key(org_id: str, day: date) -> str:
    """The org's day of audience views: members ``question audience visitor`` (``''``: none)."""
    return f"faq:an:views:{org_id}:{day:%Y%m%d}"


# KEYS: searches list, clicks list, the org's count of the day, the day's orgs, the org's
# audience views of the day.
# ARGV: org id, cap, ttl, click window, last-search key prefix, audience views cap, then one
# per event: "s <visitor> <time> <search id> <payload>" (a search) or
# "o <visitor> <time> <question id> <audience,audience|empty>" (an open).
RECORD = """
local cap, ttl, window = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local count = tonumber(redis.call('GET', KEYS[3]) or '0')
local view_room = tonumber(ARGV[6]) - redis.call('SCARD', KEYS[5])
local added, clicks, viewed = 0, 0, 0
for i = 7, #ARGV do
  local kind, visitor, stamp, id, payload = string.match(ARGV[i], '^(%a) (%S+) (%S+) (%S+) ?(.*)$')
  local last = ARGV[5] .. (visitor or '')
  local at = tonumber(stamp or '0')
  if kind == 's' or kind == 'z' then
    local stored = count < cap
    if stored then
      redis.call('RPUSH', KEYS[1], payload)
      count = count + 1
      added = added + 1
    end
    if stored and kind == 's' then
      redis.call('SET', last, id .. ' ' .. stamp, 'EX', window)
    else
      redis.call('DEL', last)
    end
  elseif kind == 'o' then
    local reader = string.sub(visitor or '', 1, VISITOR_HEX)
    local audiences = {}
    for audience in string.gmatch(payload or '', '[^,]+') do
      audiences[#audiences + 1] = audience
    end
    if #audiences == 0 then audiences[1] = '' end
    for _, audience in ipairs(audiences) do
      local member = id .. ' ' .. audience .. ' ' .. reader
      if view_room > 0 and redis.call('SADD', KEYS[5], member) == 1 then
        view_room = view_room - 1
        viewed = viewed + 1
      end
    end
    local found = redis.call('GET', last)
    if found then
      local search, searched = string.match(found, '^(%S+) (%S+)$')
      local gap = at - tonumber(searched)
      if gap >= 0 then
        redis.call('DEL', last)
        if gap <= window then
          redis.call('RPUSH', KEYS[2], search .. ' ' .. id)
          clicks = clicks + 1
        end
      end
    end
  end
end
if added > 0 then
  redis.call('SET', KEYS[3], count, 'EX', ttl)
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('SADD', KEYS[4], ARGV[1])
  redis.call('EXPIRE', KEYS[4], ttl)
end
if clicks > 0 then
  redis.call('EXPIRE', KEYS[2], ttl)
end
if viewed > 0 then
  redis.call('EXPIRE', KEYS[5], ttl)
  redis.call('SADD', KEYS[4], ARGV[1])
  redis.call('EXPIRE', KEYS[4], ttl)
end
return added
""".replace("VISITOR_HEX", str(_VISITOR_IN_VIEW))


def _results_of(body: bytes) -> int:
    """The items of a list response's first page."""
    data = orjson.loads(body).get("data")
    return len(data) if isinstance(data, list) else 0


def _question_of(body: bytes) -> str | None:
    data = orjson.loads(body).get("data")
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


class Recorder:
    """Searches, opens and votes of this process not yet in Redis, in order; flushed by a short
    task ``FLUSH_SECONDS`` after the first one (never on a request's path)."""

    def __init__(self, client: Callable[[], aioredis.Redis]) -> None:
        self._client = client
        # (org id, kind, visitor, time, search fields | question id | body)
        self._pending: list[tuple[str, str, str, float, Any]] = []
        self._vote_orgs: set[tuple[str, date]] = set()
        self._timer: asyncio.Task[None] | None = None
        self.dropped = 0

    def _add(self, event: tuple[str, str, str, float, Any]) -> None:
        if len(self._pending) >= MAX_PENDING:
            self.dropped += 1
            return
        self._pending.append(event)
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._flush_later())

    def search(
        self,
        org_id: str,
        *,
        source: str,
        locale: str,
        query: str,
        visitor: str,
        at: float,
        results: int | None = None,
        body: bytes | None = None,
        audiences: tuple[str, ...] = (),
    ) -> None:
        """A normalised, non-empty query; its count, else the response body to count from
        (a cached API page: counted at the flush, not on the request's path); ``audiences``:
        the reader's (``audiences_of``), ``()`` for an anonymous reader."""
        fields = (source, locale, query, results, body, audiences)
        self._add((org_id, "s", visitor, at, fields))

    def open(
        self,
        org_id: str,
        *,
        visitor: str,
        at: float,
        question_id: str | None = None,
        body: bytes | None = None,
        audiences: tuple[str, ...] = (),
    ) -> None:
        """A question opened (its id, else the single read's body to take it from), by a
        reader of ``audiences`` (``audiences_of``; ``()``: anonymous)."""
        opened = question_id if question_id is not None else body
        self._add((org_id, "o", visitor, at, (opened, audiences)))

    def vote(self, org_id: str, day: date) -> None:
        """An org had a vote that day: the collect job aggregates its feedback."""
        self._vote_orgs.add((org_id, day))
        self._schedule()

    async def _flush_later(self) -> None:
        await asyncio.sleep(FLUSH_SECONDS)
        self._timer = None  # events added from here on get the next flush
        await self.flush()

    async def flush(self) -> None:
        pending, self._pending = self._pending, []
        votes, self._vote_orgs = self._vote_orgs, set()
        if self.dropped:
            log.warning("analytics_events_dropped", events=self.dropped)
            self.dropped = 0
        by_org: dict[str, list[str]] = {}
        batch = f"se_{ULID()}."  # a search's id: the flush's ULID and its place in the flush
        for n, (org_id, kind, visitor, at, data) in enumerate(pending):
            try:
                event = _event(kind, visitor, at, data, f"{batch}{n:x}")
            except (ValueError, TypeError):  # no or an unreadable body: not recorded
                continue
            if event:
                by_org.setdefault(org_id, []).append(event)
        today = _day(now())
        for org_id, args in by_org.items():
            try:
                await self._client().eval(
                    RECORD,
                    5,
                    searches_key(org_id),
                    clicks_key(org_id),
                    count_key(org_id, today),
                    orgs_key(today),
                    audience_views_key(org_id, today),
                    org_id,
                    MAX_SEARCHES_PER_ORG_DAY,
                    EVENT_TTL_SECONDS,
                    CLICK_WINDOW_SECONDS,
                    last_search_prefix(org_id),
                    MAX_AUDIENCE_VIEWS_PER_ORG_DAY,
                    *args,
                )  # type: ignore[misc]
            except Exception:  # Redis down or slow: these are lost, the pages are not
                log.warning("analytics_events_lost", org_id=org_id, events=len(args))
        if votes:
            try:
                pipe = self._client().pipeline(transaction=False)
                for org_id, day in votes:
                    pipe.sadd(orgs_key(day), org_id)
                    pipe.expire(orgs_key(day), EVENT_TTL_SECONDS)
                await pipe.execute()
            except Exception:
                log.warning("analytics_vote_orgs_lost", orgs=len(votes))

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self.flush()


def _event(kind: str, visitor: str, at: float, data: Any, search_id: str) -> str | None:
    """One event as the script reads it (``RECORD``); None: nothing to record."""
    if kind == "o":
        opened, audiences = data
        question_id = opened if isinstance(opened, str) else _question_of(opened)
        if question_id is None:
            return None
        return f"o {visitor} {at!r} {question_id} {','.join(_slugs(audiences))}"
    source, locale, query, results, body, audiences = data
    count = results if results is not None else _results_of(body)
    payload = orjson.dumps(
        {
            "id": search_id,
            "at": at,
            "source": source,
            "locale": locale,
            "query": query,
            "results": count,
            "visitor": visitor,
            "audiences": _slugs(audiences),
        }
    ).decode()
    # A search that found nothing ("z") ends the visitor's last search but has no result to
    # open: the question opened next is not its click.
    return f"{'s' if count else 'z'} {visitor} {at!r} {search_id} {payload}"


def _slugs(audiences: tuple[str, ...]) -> list[str]:
    """Sorted, once each, and only what can be an audience slug (no space or comma can reach
    the script's fields: tokens' claims are checked the same way)."""
    return sorted({a for a in audiences if _SLUG.fullmatch(a) and len(a) <= 100})


def recorder_for(extensions: MutableMapping[str, Any]) -> Recorder:
    """The app's recorder (in its ``extensions``), made on first use."""
    recorder: Recorder | None = extensions.get(EXTENSION)
    if recorder is None:
        recorder = extensions[EXTENSION] = Recorder(loop_client)
    return recorder
