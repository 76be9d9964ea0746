"""CORS for publishable keys only (issue 16).

- A request made with a ``public`` key whose ``Origin`` the key lists gets
  ``Access-Control-Allow-Origin: <origin>``; every response to a public key says
  ``Vary: Origin``. An unlisted origin gets no CORS header (the request is still answered;
  the browser hides it). Secret keys (read, write, admin) never get CORS headers.
- A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``, no
  ``Authorization``: browsers never send one) is always 204; it carries the CORS headers only
  when the path is one a public key may read and some active public key of the org in the
  path lists the origin (``Directory.public_origins``, cached, dropped on NOTIFY). A view a
  public key may write to (the widget's votes, issue 41) names its own methods and headers
  (``preflight_allows``).
- An error before any valid key was presented (401) follows the same rule as a preflight, so
  the page can read it; errors to a public key (403, 404, 429) follow the key's list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import structlog
from quart import Response, current_app, g, request

from api.http.binding import PUBLIC_ATTRIBUTE, client_address, tenancy
from tenancy.settings import Settings

log = structlog.get_logger(__name__)

ALLOW_METHODS = "GET"
ALLOW_HEADERS = "Authorization, Accept-Language, X-Reader-Token"
MAX_AGE = "600"  # browsers cap it (Chromium: 2 hours, Firefox: 24 hours)
METHODS_ATTRIBUTE = "_faq_cors_methods"
HEADERS_ATTRIBUTE = "_faq_cors_headers"
F = TypeVar("F", bound=Callable[..., Any])


def preflight_allows(methods: str, headers: str) -> Callable[[F], F]:
    """The methods and headers a preflight of this (public) view allows, instead of
    ``ALLOW_METHODS`` and ``ALLOW_HEADERS``."""

    def decorator(func: F) -> F:
        setattr(func, METHODS_ATTRIBUTE, methods)
        setattr(func, HEADERS_ATTRIBUTE, headers)
        return func

    return decorator


def _view() -> Any:
    return current_app.view_functions.get(request.endpoint or "")


def _public_readable() -> bool:
    return bool(getattr(_view(), PUBLIC_ATTRIBUTE, False))


def _is_preflight() -> bool:
    return (
        request.method == "OPTIONS"
        and "Origin" in request.headers
        and "Access-Control-Request-Method" in request.headers
        and "Authorization" not in request.headers
    )


async def _org_allows(origin: str) -> bool:
    """Some active public key of the org named in the path lists ``origin``. An unknown org
    counts as a failed authentication of the client's address; past
    ``FAQ_AUTH_FAILURES_PER_MINUTE`` its lookups stop reaching PostgreSQL for the minute (a
    flood of invented org names costs Redis reads only)."""
    if not _public_readable():
        return False
    ext = tenancy()
    settings: Settings = current_app.extensions["settings"]
    per_minute = settings.faq_auth_failures_per_minute
    limiter = ext.rate_limiter
    try:
        if limiter is not None and await limiter.failures_exceeded(client_address(), per_minute):
            return False
        org = await ext.directory.org(g.get("org_slug", ""))
        if org is None:
            if limiter is not None:
                await limiter.failed_authentication(client_address(), per_minute)
            return False
        return origin in await ext.directory.public_origins(org.id)
    except Exception:  # PostgreSQL unreachable: no CORS headers, the answer stands
        log.warning("cors_origins_unavailable", exc_info=True)
        return False


async def answer_preflight() -> Response | None:
    """A blueprint ``before_request``, ahead of the key check: preflights carry no key."""
    if not _is_preflight():
        return None
    response = Response("", status=204)
    origin = request.headers["Origin"]
    response.vary.add("Origin")
    if await _org_allows(origin):
        response.headers["Access-Control-Allow-Origin"] = origin
        view = _view()
        methods = getattr(view, METHODS_ATTRIBUTE, ALLOW_METHODS)
        response.headers["Access-Control-Allow-Methods"] = methods
        response.headers["Access-Control-Allow-Headers"] = getattr(
            view, HEADERS_ATTRIBUTE, ALLOW_HEADERS
        )
        response.headers["Access-Control-Max-Age"] = MAX_AGE
    return response


async def add_cors_headers(response: Response) -> Response:
    """A blueprint ``after_request``: the CORS headers of a request that is not a preflight
    (``api.http.binding`` leaves ``g.cors_origins`` for a public key, ``g.secret_key`` for
    others)."""
    if g.get("secret_key") or _is_preflight():
        return response
    listed: tuple[str, ...] | None = g.get("cors_origins")
    if listed is not None:
        response.vary.add("Origin")
    origin = request.headers.get("Origin")
    if origin is None:
        return response
    if listed is not None:
        allowed = origin in listed
    else:
        # No valid key (401 and the like): the org's public keys decide, as for a preflight.
        response.vary.add("Origin")
        allowed = await _org_allows(origin)
    if allowed:
        response.headers["Access-Control-Allow-Origin"] = origin
    return response
