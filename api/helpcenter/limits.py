"""Rate limits of the anonymous help center (issue 26): ASGI middleware in front of the app
(``HelpCenterLimits``, installed by ``api/app.py``) for every request under ``/hc/``.

- Every request (pages, the stylesheet, the feedback form) counts against its client address
  (``api.http.client_addresses.client_behind_proxies``, as
  ``api.http.binding.client_address`` chooses it; IPv6 by its /64; a peer that is not an IP
  address, a Unix socket, names no client and is not counted per address) and against
  the org its path names; a search
  (``/hc/{org}/{locale}/search``: a full-text query that also feeds the org's analytics)
  counts against both search budgets too, which are tighter.
- The numbers are settings (``FAQ_HC_PAGES_PER_ADDRESS_PER_MINUTE`` and its three siblings;
  0: no limit), each a token bucket (GCRA) that holds ``FAQ_HC_BURST_SECONDS`` (10 s) worth
  of its budget: past a burst a flood is admitted at the budget's rate, evenly spread, never
  a minute's worth at once (a fixed window let each new window open with a burst of costly
  searches).
- Counted in Redis in one round trip (``RateLimiter.hit_help_center``) before Quart builds a
  request: a refused request costs no routing, no hook, no org lookup and no query (in a
  ``before_request`` hook a refusal cost as much as a cached page, measured, so a flood of
  them still took its share of the process). A request over its address's budget is not
  counted against its org's, so one address cannot turn a help center off for everyone.
- Over a budget: 429 with ``Retry-After`` (when that budget admits again), the help center's
  error page (``hc/error.html``, without an org's look: no org is looked up) with its own
  title and message in the visitor's language, the catalog language of the locale the path
  names (``/hc/{org}/{locale}/…``; ``fr`` for ``fr-CA``; else English), right to left for
  Arabic; each rendered once per process, reason and language (``page_language``: a bounded
  set), the help center's security headers, ``Cache-Control: no-store``, an
  ``X-Request-Id``, the metrics and the access log line (``api.http.observability``), as Quart's
  answers have. Fails open without Redis.
"""

from __future__ import annotations

import time
from typing import Any

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope, Scope
from quart import Quart

from api.helpcenter.i18n import CATALOGS, LABELS, candidates
from api.helpcenter.pages import standalone_context
from api.helpcenter.responses import SECURITY_HEADERS
from api.http.binding import Tenancy
from api.http.client_addresses import client_behind_proxies, parse_address
from api.http.observability import bind_request_id, observe, request_id_for
from api.http.rate_limit import HelpCenterLimits as Limits
from api.http.rate_limit import Refusal
from tenancy.orgs import ORG_SLUG_RE
from tenancy.settings import Settings

PREFIX = "/hc/"
ROUTE = "/hc/<rate_limited>"  # the metrics' route label of a refusal
TITLE = LABELS["tooManyRequestsTitle"]  # English msgids, translated per language
MESSAGES = {"address": LABELS["tooManyFromNetwork"], "org": LABELS["helpCenterBusy"]}
ENGLISH = "en"
FIXED_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    *((name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()),
]


def help_center_limits(settings: Settings) -> Limits:
    return Limits(
        pages_per_address=settings.faq_hc_pages_per_address_per_minute,
        searches_per_address=settings.faq_hc_searches_per_address_per_minute,
        pages_per_org=settings.faq_hc_pages_per_org_per_minute,
        searches_per_org=settings.faq_hc_searches_per_org_per_minute,
        burst_seconds=settings.faq_hc_burst_seconds,
    )


def org_and_search(path: str) -> tuple[str | None, bool]:
    """The org a help-center path names, when it could be one (``tenancy.orgs.ORG_SLUG_RE``:
    anything else is a 404 for every org, counted against the address only), and whether it
    is the search page (``/hc/{org}/{locale}/search``)."""
    parts = path[len(PREFIX) :].split("/")
    slug = parts[0] if ORG_SLUG_RE.fullmatch(parts[0]) else None
    return slug, len(parts) == 3 and parts[2] == "search"


def page_language(path: str) -> str:
    """The catalog language of the locale a help-center path names (``/hc/{org}/{locale}/…``:
    ``fr`` for ``fr`` and ``fr-CA``), else English: one of a bounded set, whatever the path
    holds."""
    parts = path[len(PREFIX) :].split("/", 2)
    if len(parts) < 2:
        return ENGLISH
    for candidate in candidates(parts[1]):
        if candidate.replace("-", "_") in CATALOGS:
            return candidate
    return ENGLISH


def _header_values(scope: HTTPScope, name: bytes) -> list[str]:
    return [value.decode("latin1") for key, value in scope["headers"] if key == name]


class HelpCenterLimits:
    """ASGI middleware (``app.asgi_app``): refuses a help-center request over its budgets
    itself, hands every other request to the app unchanged."""

    def __init__(self, app: Quart) -> None:
        self.app = app
        self.inner = app.asgi_app
        self._pages: dict[tuple[str, str], bytes] = {}  # (reason, language) -> the 429 page

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if (
            scope["type"] == "http"
            and scope["path"].startswith(PREFIX)
            and "tenancy" in self.app.extensions
        ):
            started = time.perf_counter()
            refusal = await self._count(scope)
            if refusal is not None:
                await self._refuse(scope, send, refusal)
                observe(scope["method"], ROUTE, 429, time.perf_counter() - started)
                return
        await self.inner(scope, receive, send)

    async def _count(self, scope: HTTPScope) -> Refusal | None:
        ext: Tenancy = self.app.extensions["tenancy"]
        if ext.rate_limiter is None:
            return None
        settings: Settings = self.app.extensions["settings"]
        client = scope.get("client")
        address = client_behind_proxies(
            settings, client[0] if client else None, _header_values(scope, b"x-forwarded-for")
        )
        slug, search = org_and_search(scope["path"])
        return await ext.rate_limiter.hit_help_center(
            # A peer that is not an IP address (a Unix socket) names no client: counting
            # everyone behind it as one would make the per-address budget service-wide.
            address if parse_address(address) is not None else None,
            slug,
            search=search,
            limits=help_center_limits(settings),
        )

    async def _refuse(self, scope: HTTPScope, send: ASGISendCallable, refusal: Refusal) -> None:
        key = (refusal.by, page_language(scope["path"]))
        body = self._pages.get(key)
        if body is None:
            template = self.app.jinja_env.get_template("hc/error.html")
            text = await template.render_async(
                **standalone_context(key[1]),
                status=429,
                title=TITLE,
                message=MESSAGES[refusal.by],
                values={},
            )
            body = self._pages[key] = text.encode()
        incoming = _header_values(scope, b"x-request-id")
        request_id = request_id_for(incoming[0] if incoming else "")
        bind_request_id(request_id)
        headers: list[Any] = [
            *FIXED_HEADERS,
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(refusal.reset_seconds).encode()),
            (b"x-request-id", request_id.encode("latin1")),
        ]
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
