"""The help center's "Was this helpful?" form and its page-view counting (HTTP half).

- ``POST /hc/{org}/{locale}/questions/{slug}/feedback``: a plain HTML form (no JavaScript),
  CSRF-protected (``api.helpcenter.visitors.csrf_token``); 303 back to the question page
  (``?feedback=thanks#feedback``), 403 for a bad token, 400 for a vote it cannot read, 404
  when the org, its help center, the locale or the published question is not there, 429 past
  ``VOTES_PER_MINUTE`` per address. Before anything else, a POST from another site is a 403
  page (``from_another_site``): the token of a browser without the cookie is bound to its
  address only, which a forger behind the same NAT shares. Each refusal is the help center's
  error page (``api.helpcenter.pages.error_page``: the visitor's language from the URL, the
  org's look when the org is known), with its own title and message (labels of ``LABELS``).
- The question page (``api/helpcenter/routes.py``) sets ``g.hc_question`` and renders
  ``hc/_feedback.html`` per request; ``count_view`` then records one view of a 200 page in
  an in-process buffer, sent to Redis in one script call per org every ``FLUSH_SECONDS``
  (never on the request's path), and gives a visitor without a valid one the ``hc_visitor``
  cookie. A response that carries the form's per-visitor token or that cookie is
  ``Cache-Control: private, no-store`` (this hook runs after the help center's, whose
  ``no-cache`` it replaces).
- Content analytics (``api.analytics.recording``): the view is also an "open" (the result a
  search led to), and a vote marks its org for the day's aggregation; both buffered.
  ``FAQ_CONTENT_ANALYTICS=false`` records no views or opens (votes are still kept).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

import structlog
from quart import Blueprint, Quart, Response, current_app, g, request
from redis.exceptions import RedisError

from api.analytics import recording
from api.helpcenter.access import (
    from_another_site,
    is_https,
    is_private,
    page_audiences,
    page_principal,
    page_reader,
    signing_secret,
)
from api.helpcenter.i18n import LABELS
from api.helpcenter.pages import error_page
from api.helpcenter.responses import SECURITY_HEADERS
from api.helpcenter.visitors import (
    REASON_MAX,
    VISITOR_COOKIE,
    VISITOR_COOKIE_MAX_AGE,
    csrf_token,
    csrf_valid,
    new_visitor_token,
    published_question_id,
    record_views,
    record_vote,
    valid_visitor_token,
    view_address,
    view_member,
    view_visitor,
    visitor_id,
)
from api.http.binding import client_address, tenancy
from tenancy.db import tenant_session
from tenancy.directory import OrgRecord
from tenancy.redis import loop_client
from tenancy.settings import Settings
from tenancy.transactions import commit

log = structlog.get_logger(__name__)
feedback = Blueprint("hc_feedback", __name__, template_folder="templates")
FLUSH_SECONDS = 1.0
MAX_PENDING_VIEWS = 50_000  # per process between two flushes: past it a view is dropped
VOTES_PER_MINUTE = 30  # per client address
PRIVATE = "private, no-store"  # a response with a per-visitor token or cookie
BUFFER = "hc_views"
# The (title, message) of each refusal's page: English msgids of ``LABELS``.
FROM_ANOTHER_SITE = (LABELS["otherSiteTitle"], LABELS["otherSiteMessage"])
FORM_EXPIRED = (LABELS["formExpiredTitle"], LABELS["formExpiredMessage"])
VOTE_UNREADABLE = (LABELS["voteUnreadableTitle"], LABELS["voteUnreadableMessage"])
TOO_MANY_VOTES = (LABELS["tooManyVotesTitle"], LABELS["tooManyVotesMessage"])
NO_SUCH_QUESTION = (LABELS["notFoundTitle"], LABELS["noSuchQuestion"])


class ViewBuffer:
    """Views of this process not yet in Redis, deduplicated; flushed by a short task."""

    def __init__(self) -> None:
        # {(org, day): {member: the hashed address it came from}}
        self._pending: dict[tuple[str, date], dict[str, str]] = {}
        self._size = 0
        self._timer: asyncio.Task[None] | None = None
        self.dropped = 0

    def add(self, org_id: str, day: date, member: str, address: str) -> None:
        members = self._pending.setdefault((org_id, day), {})
        if member in members:
            return
        if self._size >= MAX_PENDING_VIEWS:
            self.dropped += 1
            return
        members[member] = address
        self._size += 1
        if self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(FLUSH_SECONDS)
        self._timer = None  # views added from here on get the next flush
        await self.flush()

    async def flush(self) -> None:
        pending, self._pending, self._size = self._pending, {}, 0
        if self.dropped:
            log.warning("help_center_views_dropped", views=self.dropped)
            self.dropped = 0
        for (org_id, day), members in pending.items():
            try:
                await record_views(loop_client(), org_id, day, members)
            except Exception:  # Redis down or slow: these views are lost, the pages are not
                log.warning("help_center_views_lost", org_id=org_id, views=len(members))

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self.flush()


def _settings() -> Settings:
    settings: Settings = current_app.extensions["settings"]
    return settings


def _buffer(app: Quart | None = None) -> ViewBuffer:
    extensions = (app or current_app).extensions
    buffer: ViewBuffer | None = extensions.get(BUFFER)
    if buffer is None:
        buffer = extensions[BUFFER] = ViewBuffer()
    return buffer


async def flush_views(app: Quart) -> None:
    """Send the app's pending views to Redis now (tests; shutdown does it too)."""
    await _buffer(app).flush()


@feedback.after_app_serving
async def _flush_at_shutdown() -> None:
    await _buffer().stop()
    await recording.recorder_for(current_app.extensions).stop()


@dataclass
class Reader:
    """This request's reader, worked out once: its cookie (when one of ours), its address,
    and the cookie this response gives it when it has none."""

    cookie: str | None
    address: str
    new_token: str | None = None
    cookie_path: str = "/"
    personal: bool = False  # the response carries a token made for this reader

    def token(self) -> str:
        """The cookie, else the one this response gives."""
        if self.cookie is not None:
            return self.cookie
        if self.new_token is None:
            self.new_token = new_visitor_token(_today())
        return self.new_token


def _reader() -> Reader:
    reader: Reader | None = g.get("hc_reader")
    if reader is None:
        cookie = valid_visitor_token(request.cookies.get(VISITOR_COOKIE))
        reader = g.hc_reader = Reader(cookie, client_address())
    return reader


def _today() -> date:
    return datetime.now(UTC).date()


def _org_id(org: Any) -> str:
    return str(org.id if not isinstance(org, dict) else org["id"])


def _field(item: Any, name: str) -> str:
    return str(item[name] if isinstance(item, dict) else getattr(item, name))


def _csrf_for(org: Any) -> str:
    reader = _reader()
    reader.cookie_path = f"/hc/{_field(org, 'slug')}"
    reader.personal = True
    return csrf_token(signing_secret(), _org_id(org), token=reader.token(), address=reader.address)


def _question_path(org: str, locale: str, slug: str) -> str:
    return f"/hc/{quote(org, safe='')}/{quote(locale, safe='')}/questions/{quote(slug, safe='')}"


def _action_for(org: Any, locale: str, question: Any) -> str:
    """The vote route of the page (``vote``), built directly: this runs on every page."""
    return _question_path(_field(org, "slug"), locale, _field(question, "slug")) + "/feedback"


@feedback.app_context_processor
async def _feedback_context() -> dict[str, Any]:
    """Callables, so only a template that shows the form makes a token (and a cookie). Async:
    a sync context processor runs in the thread pool on every render (Quart's ``run_sync``)."""
    return {"hc_csrf_token": _csrf_for, "hc_feedback_action": _action_for}


@feedback.after_app_request
async def count_view(response: Response) -> Response:
    question: dict[str, Any] | None = g.get("hc_question")
    if question is not None and response.status_code == 200 and request.method == "GET":
        org: OrgRecord = question["org"]
        reader = _reader()
        extensions = current_app.extensions
        if recording.enabled(extensions):  # FAQ_CONTENT_ANALYTICS
            day, secret = _today(), signing_secret()
            visitor = view_visitor(
                secret, org.id, token=reader.cookie, address=reader.address, today=day
            )
            address = view_address(secret, org.id, address=reader.address, today=day)
            _buffer().add(org.id, day, view_member(question["question_id"], visitor), address)
            raw = recording.help_center_visitor(reader.cookie, reader.address)
            hashed, at = recording.stamp(extensions, org.id, raw)
            recording.recorder_for(extensions).open(
                org.id,
                visitor=hashed,
                at=at,
                question_id=question["question_id"],
                audiences=recording.audiences_of(page_principal(org)),
            )
        reader.token()
        reader.cookie_path = f"/hc/{org.slug}"
    reader = g.get("hc_reader")
    if reader is not None and reader.new_token is not None and response.status_code < 400:
        _set_visitor_cookie(response, reader)
    personal = reader is not None and reader.personal
    if personal or ("Set-Cookie" in response.headers and request.path.startswith("/hc/")):
        response.headers["Cache-Control"] = PRIVATE
    return response


def _set_visitor_cookie(response: Response, reader: Reader) -> None:
    """``Set-Cookie`` written out (the token and the path need no quoting; werkzeug's
    ``dump_cookie`` costs more than the rest of the view counting)."""
    secure = "; Secure" if is_https() else ""
    response.headers.add(
        "Set-Cookie",
        f"{VISITOR_COOKIE}={reader.new_token}; Max-Age={VISITOR_COOKIE_MAX_AGE}; "
        f"Path={quote(reader.cookie_path)}; HttpOnly; SameSite=Lax{secure}",
    )


async def _page(
    status: int, error: tuple[str, str], headers: dict[str, str] | None = None, **values: Any
) -> Response:
    """The help center's error page of ``status`` with this refusal's (title, message), in
    the visitor's language (``error_page``), never cached."""
    response = await error_page(status, headers, error=error, values=values)
    response.headers.update(SECURITY_HEADERS)
    return response


async def _not_found() -> Response:
    return await _page(404, NO_SUCH_QUESTION)


async def _rate_limited(address: str) -> bool:
    """Votes per address per minute, in Redis (a key per address and minute, 2 min TTL; the
    address hashed). Fails open when Redis is unreachable."""
    hashed = visitor_id(signing_secret(), "votes", token=None, address=address)
    minute = int(datetime.now(UTC).timestamp() // 60)
    key = f"faq:hc:votes:{hashed[:32]}:{minute}"
    try:
        pipe = loop_client().pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 120)
        count, _ = await pipe.execute()
    except (RedisError, OSError):
        return False
    return int(count) > VOTES_PER_MINUTE


@feedback.post("/hc/<org>/<locale>/questions/<slug>/feedback")
async def vote(org: str, locale: str, slug: str) -> Response:
    if from_another_site():
        return await _page(403, FROM_ANOTHER_SITE)
    ext = tenancy()
    record = await ext.directory.org(org)
    if record is None or not record.help_center.get("enabled") or locale not in record.locales:
        return await _not_found()
    if is_private(record) and page_reader(record) is None:  # issue 39: signed-in readers only
        return await _not_found()
    form = await request.form
    reader = _reader()
    if not csrf_valid(
        _settings().secret_keys(),
        record.id,
        form.get("csrf_token", ""),
        token=reader.cookie,
        address=reader.address,
    ):
        return await _page(403, FORM_EXPIRED)
    helpful = form.get("helpful")
    reason = (form.get("reason") or "").replace("\x00", "").strip() or None
    if helpful not in ("yes", "no") or (reason is not None and len(reason) > REASON_MAX):
        return await _page(400, VOTE_UNREADABLE, max=REASON_MAX)
    if await _rate_limited(reader.address):
        return await _page(429, TOO_MANY_VOTES, {"Retry-After": "60"})
    async with tenant_session(ext.engine, record.schema_name) as session:
        question_id = await published_question_id(session, slug, page_audiences(record))
        if question_id is None:
            return await _not_found()
        await record_vote(
            session,
            question_id=question_id,
            visitor=visitor_id(
                signing_secret(), record.id, token=reader.cookie, address=reader.address
            ),
            helpful=helpful == "yes",
            reason=reason,
            locale=locale,
        )
        await commit(session)
    # The org has feedback to aggregate today (``analytics-collect``; buffered, no I/O here).
    recording.recorder_for(current_app.extensions).vote(record.id, _today())
    response = Response("", status=303)
    response.headers["Location"] = f"{_question_path(org, locale, slug)}?feedback=thanks#feedback"
    response.headers["Cache-Control"] = "no-store"
    return response
