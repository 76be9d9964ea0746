"""Readers signed in to the hosted help center (issue 39), and the private help center.

- **Who reads a page** (``page_reader``): the reader of this request's session cookie
  (``READER_COOKIE``: signed with ``FAQ_SECRET_KEY`` by itsdangerous, HttpOnly, SameSite=Lax,
  ``Secure`` over https, its path the org's help center), else nobody (an anonymous visitor).
  A cookie of another org, a forged or tampered one and one older than ``SESSION_SECONDS``
  are nobody. Every page reads content through ``page_audiences`` (``api.audiences.
  visibility``: the one rule), and ``page_principal`` is the principal of the help center's
  other reads (search, ``/answers``' legs): the anonymous visitor's with the reader.
- **Signing in** ends in ``start_session`` (the cookie, then 303 to where the reader was
  going, ``safe_return_to``: only a path of this org's help center, never another site):
  - JWT (Zendesk-style): the org's own application signs a reader token exactly as for the
    API (``api.audiences.tokens``: the same keys, issuer and lifetime rules) and sends the
    reader to ``/hc/{org}/access/jwt?token=…&return_to=…``. A token signs in once
    (``_spend``: a replayed link from a browser's history or a log is refused).
  - OpenID Connect with the org's identity provider: ``api.helpcenter.oidc``.
- **The sign-in page** ``/hc/{org}/access``: the ways in the org set up (its own sign-in page,
  ``helpCenter.signInUrl``, which gets ``return_to``; its identity provider), or, signed in,
  who the reader is and a sign-out button. ``POST /hc/{org}/access/sign-out`` clears the
  cookie.
- **A private help center** (``helpCenter.access: "signed-in"``): ``readable_org`` sends an
  anonymous visitor of any page to the sign-in page (302); only the sign-in page, the
  stylesheet and the favicon are served to them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote, urlencode, urlsplit

import structlog
from itsdangerous import BadSignature, URLSafeTimedSerializer
from quart import Blueprint, Response, current_app, g, render_template, request
from redis.exceptions import RedisError

from api.audiences.tokens import MAX_TOKEN_BYTES, claims_reader, verified_claims
from api.audiences.visibility import Audiences
from api.errors import InvalidReaderToken, ServiceUnavailable
from api.helpcenter.pages import HTML, page_context
from api.helpcenter.urls import PageNotFound
from api.http.authentication import visitor
from api.http.binding import peer_is_trusted_proxy, tenancy
from api.settings import help_center as hc_settings
from tenancy.directory import OrgRecord
from tenancy.principal import Principal, Reader
from tenancy.redis import loop_client
from tenancy.settings import Settings

log = structlog.get_logger(__name__)

access = Blueprint("hc_access", __name__)

READER_COOKIE = "hc_reader"
SESSION_SECONDS = 8 * 3600  # a signed-in reader signs in again after a working day
SALT = "hc-reader-session"
MAX_RETURN_TO = 2000
SPENT_PREFIX = "hc:spent-token:"  # + sha256 of a JWT that signed in (until it expires)
PRIVATE = "private, no-cache"
SIGNING_SLOT = "hc_signing"
DEFAULT_PORTS = {"http": 80, "https": 443}
_UNSET = object()


def signing_secret() -> str:
    """The current ``FAQ_SECRET_KEY`` (read once per app: it runs on every question page)."""
    secret: str | None = current_app.extensions.get(SIGNING_SLOT)
    if secret is None:
        settings: Settings = current_app.extensions["settings"]
        secret = current_app.extensions[SIGNING_SLOT] = settings.require_secret_key()
    return secret


def is_https() -> bool:
    if request.scheme == "https":
        return True
    forwarded = request.headers.get("X-Forwarded-Proto", "")
    return peer_is_trusted_proxy() and forwarded.split(",")[0].strip() == "https"


def _origin(scheme: str, host: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port filled in, lowercased; None when
    it is not a web origin."""
    scheme = scheme.lower()
    default = DEFAULT_PORTS.get(scheme)
    try:
        parts = urlsplit(f"{scheme}://{host}")
        port = parts.port or default
    except ValueError:
        return None
    if default is None or not parts.hostname or port is None:
        return None
    return scheme, parts.hostname, port


def from_another_site() -> bool:
    """A form POST that a browser says comes from another site: ``Sec-Fetch-Site:
    cross-site``, or an ``Origin`` that is not this request's own (``null`` included). A
    browser that sends neither is let through (the token still holds it). An https ``Origin``
    for an http request of the same host and port is ours: TLS ended at a proxy in front."""
    if request.headers.get("Sec-Fetch-Site", "").strip().lower() == "cross-site":
        return True
    sent = request.headers.get("Origin")
    if sent is None:
        return False
    scheme, sep, host = sent.strip().partition("://")
    theirs = _origin(scheme, host) if sep and not set("/@?#") & set(host) else None
    ours = _origin(request.scheme, request.host)
    if theirs is None or ours is None:
        return True
    if theirs == ours:
        return False
    behind_tls_proxy = (theirs[0], ours[0]) == ("https", "http")
    default_ports = (theirs[2], ours[2]) == (443, 80)
    same_place = theirs[1] == ours[1] and (theirs[2] == ours[2] or default_ports)
    return not (behind_tls_proxy and same_place)


class SignInRequired(Exception):
    """An anonymous visitor of a private help center's page: to the sign-in page."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


async def enabled_org(slug: str) -> OrgRecord:
    """The org of ``/hc/{slug}`` when its help center is on, else 404."""
    org = await tenancy().directory.org(slug)
    if org is None or org.help_center.get("enabled") is not True:
        raise PageNotFound()
    return org


def is_private(org: OrgRecord) -> bool:
    return bool(org.help_center.get("access") == "signed-in")


async def readable_org(slug: str) -> OrgRecord:
    """``enabled_org``, and for a private help center a signed-in reader, else
    ``SignInRequired`` (the sign-in page, back here afterwards)."""
    org = await enabled_org(slug)
    if is_private(org) and page_reader(org) is None:
        raise SignInRequired(sign_in_url(org, here()))
    return org


def here() -> str:
    """This request's path and query, as a ``return_to``."""
    path = quote(request.path, safe="/!$&'()*+,;=:@")
    query = request.query_string.decode("latin-1")
    return f"{path}?{query}" if query else path


def sign_in_url(org: OrgRecord, return_to: str | None = None) -> str:
    query = f"?{urlencode({'return_to': return_to})}" if return_to else ""
    return f"/hc/{quote(org.slug, safe='')}/access{query}"


def sign_out_url(org: OrgRecord) -> str:
    return f"/hc/{quote(org.slug, safe='')}/access/sign-out"


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(signing_secret(), salt=SALT)


def _reader_of(data: Any, org: OrgRecord) -> Reader | None:
    if not isinstance(data, dict) or data.get("o") != org.id:
        return None
    sub, audiences = data.get("s"), data.get("a")
    if not isinstance(sub, str) or not isinstance(audiences, list):
        return None
    email, name = data.get("e"), data.get("n")
    return Reader(
        sub,
        tuple(a for a in audiences if isinstance(a, str)),
        email if isinstance(email, str) else None,
        name if isinstance(name, str) else None,
    )


def page_reader(org: OrgRecord) -> Reader | None:
    """The reader signed in to ``org``'s help center in this request, else None (once per
    request: kept on ``g``)."""
    found = g.get("hc_signed_in", _UNSET)
    if found is not _UNSET:
        return found if isinstance(found, Reader) else None
    reader = None
    # Cookies are parsed only when ours is there (HTTP/2 may split them into several headers).
    if any(READER_COOKIE in header for header in request.headers.getlist("Cookie")):
        raw = request.cookies.get(READER_COOKIE)
        if raw and len(raw) <= 2 * MAX_TOKEN_BYTES:
            try:
                data = _serializer().loads(raw, max_age=SESSION_SECONDS)
            except BadSignature:  # forged, tampered, another secret, or too old
                data = None
            reader = _reader_of(data, org)
    g.hc_signed_in = reader
    return reader


def page_audiences(org: OrgRecord) -> Audiences:
    """The audiences this request's reader belongs to (``()``: anonymous, public content)."""
    reader = page_reader(org)
    return reader.audiences if reader is not None else ()


def page_principal(org: OrgRecord) -> Principal:
    """The help center's principal: the anonymous visitor's, with the signed-in reader."""
    principal = visitor(org)
    reader = page_reader(org)
    return principal if reader is None else dataclasses.replace(principal, reader=reader)


def private_headers(response: Response) -> Response:
    """A page for a signed-in reader: never kept by a shared cache."""
    response.headers["Cache-Control"] = PRIVATE
    response.headers["Vary"] = "Cookie"
    return response


def safe_return_to(org: OrgRecord, value: str | None) -> str:
    """Where to send a reader after signing in: ``value`` when it is a path of this org's help
    center (or such a URL on this host), else the help center's home."""
    home = f"/hc/{org.slug}/{org.default_locale}"
    if not value or len(value) > MAX_RETURN_TO:
        return home
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 or c == "\\" for c in value):
        return home
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        if parts.scheme not in ("http", "https") or parts.netloc != request.host:
            return home
        value = parts.path + (f"?{parts.query}" if parts.query else "")
    prefix = f"/hc/{org.slug}"
    path = urlsplit(value).path
    if path.startswith("//") or not (path == prefix or path.startswith(prefix + "/")):
        return home
    segments = unquote(path).split("/")
    if ".." in segments or "." in segments:  # a browser would resolve it elsewhere
        return home
    if path.startswith(f"{prefix}/access"):  # never back into a sign-in
        return home
    return value


def session_cookie(org: OrgRecord, reader: Reader) -> str:
    data = {"o": org.id, "s": reader.sub, "a": list(reader.audiences)}
    if reader.email is not None:
        data["e"] = reader.email
    if reader.name is not None:
        data["n"] = reader.name
    value = _serializer().dumps(data)
    secure = "; Secure" if is_https() else ""
    path = quote(f"/hc/{org.slug}", safe="/")
    return (
        f"{READER_COOKIE}={value}; Max-Age={SESSION_SECONDS}; Path={path}; "
        f"HttpOnly; SameSite=Lax{secure}"
    )


def start_session(org: OrgRecord, reader: Reader, return_to: str | None) -> Response:
    """The response that signs ``reader`` in: the session cookie and 303 to ``return_to``
    (made safe). Every way of signing in ends here."""
    response = Response(status=303, headers={"Location": safe_return_to(org, return_to)})
    response.headers.add("Set-Cookie", session_cookie(org, reader))
    response.headers["Cache-Control"] = "no-store"
    log.info("hc_reader_signed_in", org_id=org.id, audiences=len(reader.audiences))
    return response


def _clear_cookie(org: OrgRecord) -> str:
    path = quote(f"/hc/{org.slug}", safe="/")
    secure = "; Secure" if is_https() else ""
    return f"{READER_COOKIE}=; Max-Age=0; Path={path}; HttpOnly; SameSite=Lax{secure}"


def path_locale(org: OrgRecord, url: str | None) -> str | None:
    """The enabled locale a help-center URL names (``/hc/{org}/{locale}/…``), else None."""
    parts = urlsplit(url or "").path.split("/")
    return parts[3] if len(parts) > 3 and parts[3] in org.locales else None


def _page_locale(org: OrgRecord, return_to: str) -> str:
    """The sign-in page's language: that of the page the reader came from (the ``return_to``
    asked for, else the one given unless it is just the home), else the best of the
    browser's, else the org's default."""
    home = f"/hc/{org.slug}/{org.default_locale}"
    for came_from in (request.args.get("return_to"), return_to if return_to != home else None):
        locale = path_locale(org, came_from)
        if locale is not None:
            return locale
    best = request.accept_languages.best_match(org.locales)
    return best if isinstance(best, str) else org.default_locale


# What went wrong, as the sign-in page's problem box says it (English msgids of ``LABELS``).
PROBLEMS = {
    "link": (
        "This sign-in link is not valid",
        "It may have expired or been used already. Please sign in again.",
    ),
    "refused": ("Signing in did not work", "Please try signing in again."),
    "unavailable": ("The sign-in service did not answer", "Please try again in a moment."),
}


def _problem_kind(status: int) -> str:
    if status >= 500:
        return "unavailable"
    return "link" if request.path.endswith("/access/jwt") else "refused"


def sign_in_options(org: OrgRecord, return_to: str) -> dict[str, Any]:
    """The ways in ``org`` offers, as links that come back to ``return_to``."""
    shown = hc_settings.public(org.help_center, "")
    own = shown["signInUrl"]
    options: dict[str, Any] = {"own": None, "oidc": None}
    if own and (org.readers or {}).get("keys"):
        scheme = "https" if is_https() else request.scheme
        absolute = f"{scheme}://{request.host}{return_to}"
        joiner = "&" if "?" in own else "?"
        options["own"] = f"{own}{joiner}{urlencode({'return_to': absolute})}"
    oidc = (org.readers or {}).get("openIdConnect")
    if isinstance(oidc, Mapping) and oidc.get("clientId"):
        start = f"/hc/{quote(org.slug, safe='')}/access/oidc"
        options["oidc"] = {
            "url": f"{start}?{urlencode({'return_to': return_to})}",
            "name": oidc.get("displayName") or urlsplit(str(oidc.get("issuer"))).netloc,
        }
    return options


async def sign_in_page(
    org: OrgRecord, return_to: str, *, status: int = 200, problem: str | None = None
) -> Response:
    locale = _page_locale(org, return_to)
    title, message = PROBLEMS[_problem_kind(status)]
    context = page_context(org, locale, "")
    context["page"] = {**context["page"], "alternates": [], "canonical": None}
    context["account_slot"] = None
    body = await render_template(
        "hc/sign_in.html",
        **context,
        options=sign_in_options(org, return_to),
        reader=page_reader(org),
        private=is_private(org),
        problem=problem,
        problem_title=title,
        problem_message=message,
        sign_out=sign_out_url(org),
        here=return_to,
    )
    response = Response(body, status=status, content_type=HTML)
    response.headers["Cache-Control"] = "no-store"
    return response


@access.get("/<org_slug>/access")
async def sign_in(org_slug: str) -> Response:
    org = await enabled_org(org_slug)
    return await sign_in_page(org, safe_return_to(org, request.args.get("return_to")))


async def _spend(token: str, expires: float) -> bool:
    """True the first time ``token`` signs in (kept as spent until it expires)."""
    key = SPENT_PREFIX + hashlib.sha256(token.encode()).hexdigest()
    ttl = max(1, int(expires - time.time()) + 60)
    try:
        return bool(await loop_client().set(key, b"1", nx=True, ex=ttl))
    except RedisError:  # no way to tell a replay: no sign-in (the 503 page)
        log.warning("hc_sign_in_unavailable", reason="redis")
        raise ServiceUnavailable("Signing in is unavailable right now.") from None


@access.get("/<org_slug>/access/jwt")
async def sign_in_with_jwt(org_slug: str) -> Response:
    """The org's application sends a signed-in user here with a reader token."""
    org = await enabled_org(org_slug)
    return_to = safe_return_to(org, request.args.get("return_to"))
    token = request.args.get("token", "")
    try:
        claims = verified_claims(token, org.id, org.slug, org.readers or {})
        reader = claims_reader(claims)
    except InvalidReaderToken as error:
        log.info("hc_sign_in_refused", org_id=org.id, reason=error.message)
        return await sign_in_page(org, return_to, status=401, problem=error.message)
    if not await _spend(token, float(claims["exp"])):
        problem = "The reader token is not valid: it has been used to sign in already."
        return await sign_in_page(org, return_to, status=401, problem=problem)
    return start_session(org, reader, return_to)


@access.post("/<org_slug>/access/sign-out")
async def sign_out(org_slug: str) -> Response:
    """Clear the session; back to the home in the language of the page the reader was on (its
    ``return_to`` field), or for a private help center to its sign-in page."""
    org = await enabled_org(org_slug)
    if from_another_site():
        raise PageNotFound()  # another site's form: nothing happens
    raw = (await request.form).get("return_to")
    came_from = safe_return_to(org, raw) if raw else None
    if is_private(org):
        target = sign_in_url(org, came_from)
    else:
        target = f"/hc/{org.slug}/{path_locale(org, came_from) or org.default_locale}"
    response = Response(status=303, headers={"Location": target, "Cache-Control": "no-store"})
    response.headers.add("Set-Cookie", _clear_cookie(org))
    return response
