"""Sign in to the hosted help center with the org's OpenID Connect provider (issue 39): the
authorization code flow with PKCE (S256), ``state`` and ``nonce``, set up in
``PUT /settings/readers`` (``openIdConnect``, ``api.audiences.readers``).

- ``GET /hc/{org}/access/oidc?return_to=…`` discovers the provider, keeps ``state``, ``nonce``,
  the PKCE verifier and where the reader was going in the **flow cookie** (``FLOW_COOKIE``:
  signed with ``FAQ_SECRET_KEY`` by itsdangerous, HttpOnly, SameSite=Lax so it comes back
  with the provider's top-level redirect, its path this flow's, ``FLOW_SECONDS``) and sends
  the browser to the provider's authorization endpoint.
- ``GET /hc/{org}/access/oidc/callback?code&state`` checks ``state`` against the flow cookie,
  exchanges the code (with the verifier), verifies the ID token and ends in
  ``access.start_session`` (``api.helpcenter.oidc_provider`` does the asking and checking).
  The flow cookie is cleared whatever happens: an answer is used once.

Every refusal is the sign-in page with the reason (401: refused; 502: the provider failed),
no session. One sign-in at a time per browser: starting another replaces the flow cookie, so
the first one's answer is refused (its ``state`` is no longer the cookie's).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import structlog
from cryptography.fernet import InvalidToken
from itsdangerous import BadSignature, URLSafeTimedSerializer
from quart import Blueprint, Response, current_app, request

from api.errors import ServiceError
from api.helpcenter import oidc_provider as provider_calls
from api.helpcenter.access import (
    enabled_org,
    is_https,
    safe_return_to,
    sign_in_page,
    signing_secret,
    start_session,
)
from api.helpcenter.oidc_provider import SignInProblem, refused, unreachable
from api.helpcenter.routes import not_found_page, on_service_error
from api.helpcenter.urls import PageNotFound
from api.webhooks.signing import decrypt_secret
from tenancy.directory import OrgRecord
from tenancy.settings import Settings

log = structlog.get_logger(__name__)

hc_oidc = Blueprint("hc_oidc", __name__, url_prefix="/hc")

FLOW_COOKIE = "hc_oidc"
FLOW_SECONDS = 600
FLOW_SALT = "hc-oidc-flow"
MAX_FLOW_COOKIE = 4096


@hc_oidc.errorhandler(PageNotFound)
async def on_not_found(_error: PageNotFound) -> Response:
    return await not_found_page()


@hc_oidc.errorhandler(ServiceError)
async def on_error(error: ServiceError) -> Response:
    return await on_service_error(error)


def _config(org: OrgRecord) -> Mapping[str, Any]:
    """The org's ``openIdConnect`` setting; a help center without one has no such page."""
    config = (org.readers or {}).get("openIdConnect")
    if not isinstance(config, Mapping) or not config.get("clientId"):
        raise PageNotFound()
    return config


def _settings() -> Settings:
    settings: Settings = current_app.extensions["settings"]
    return settings


def _flow_path(org: OrgRecord) -> str:
    return quote(f"/hc/{org.slug}/access/oidc", safe="/")


def _redirect_uri(org: OrgRecord) -> str:
    scheme = "https" if is_https() else request.scheme
    return f"{scheme}://{request.host}{_flow_path(org)}/callback"


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(signing_secret(), salt=FLOW_SALT)


def _flow_cookie(org: OrgRecord, value: str, max_age: int) -> str:
    secure = "; Secure" if is_https() else ""
    return (
        f"{FLOW_COOKIE}={value}; Max-Age={max_age}; Path={_flow_path(org)}; "
        f"HttpOnly; SameSite=Lax{secure}"
    )


def _flow(org: OrgRecord) -> dict[str, str] | None:
    """This browser's sign-in in progress for ``org``: ``s`` state, ``n`` nonce, ``v`` PKCE
    verifier, ``r`` where to go after; None when missing, forged, stale or another org's."""
    raw = request.cookies.get(FLOW_COOKIE)
    if not raw or len(raw) > MAX_FLOW_COOKIE:
        return None
    try:
        data = _serializer().loads(raw, max_age=FLOW_SECONDS)
    except BadSignature:
        return None
    if not isinstance(data, dict) or data.get("o") != org.id:
        return None
    if not all(isinstance(data.get(k), str) for k in ("s", "n", "v", "r")):
        return None
    return {k: data[k] for k in ("s", "n", "v", "r")}


async def _refusal(org: OrgRecord, return_to: str, problem: SignInProblem) -> Response:
    log.info("hc_oidc_refused", org_id=org.id, status=problem.status, reason=problem.message)
    return await sign_in_page(org, return_to, status=problem.status, problem=problem.message)


@hc_oidc.get("/<org_slug>/access/oidc")
async def start(org_slug: str) -> Response:
    """Send the reader to the org's identity provider."""
    org = await enabled_org(org_slug)
    config = _config(org)
    return_to = safe_return_to(org, request.args.get("return_to"))
    try:
        provider = await provider_calls.discover(_settings(), config["issuer"])
    except SignInProblem as problem:
        return await _refusal(org, return_to, problem)
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(48)  # 64 characters (RFC 7636: 43 to 128)
    location = provider_calls.authorization_url(
        provider,
        client_id=config["clientId"],
        redirect_uri=_redirect_uri(org),
        scopes=config.get("scopes") or "openid",
        state=state,
        nonce=nonce,
        verifier=verifier,
    )
    flow = _serializer().dumps({"o": org.id, "s": state, "n": nonce, "v": verifier, "r": return_to})
    response = Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})
    response.headers.add("Set-Cookie", _flow_cookie(org, flow, FLOW_SECONDS))
    return response


def _client_secret(config: Mapping[str, Any]) -> str | None:
    stored = config.get("clientSecret")
    if stored is None:
        return None
    try:
        return decrypt_secret(stored)
    except InvalidToken:  # encrypted under a key FAQ_SECRET_KEY no longer lists
        raise unreachable("the client secret cannot be read: set it again") from None


async def _signed_in(org: OrgRecord, config: Mapping[str, Any], flow: dict[str, str]) -> Response:
    error = request.args.get("error")
    if error is not None:  # first: some providers leave state out of an error (a refusal anyway)
        reason = provider_calls.error_code(error)
        raise refused(f"the identity provider did not sign you in ({reason})")
    state = request.args.get("state", "")
    if not hmac.compare_digest(state.encode(), flow["s"].encode()):
        raise refused("the identity provider's answer does not belong to this sign-in (state)")
    code = request.args.get("code")
    if not code:
        raise refused("the identity provider's answer has no authorization code")
    settings = _settings()
    provider = await provider_calls.discover(settings, config["issuer"])
    tokens = await provider_calls.exchange_code(
        settings,
        provider,
        client_id=config["clientId"],
        client_secret=_client_secret(config),
        code=code,
        redirect_uri=_redirect_uri(org),
        verifier=flow["v"],
    )
    claims = await provider_calls.verify_id_token(
        settings, provider, tokens["id_token"], client_id=config["clientId"], nonce=flow["n"]
    )
    reader = provider_calls.reader_of(claims, config.get("audiencesClaim"))
    return start_session(org, reader, flow["r"])


@hc_oidc.get("/<org_slug>/access/oidc/callback")
async def callback(org_slug: str) -> Response:
    """The identity provider sends the reader back here."""
    org = await enabled_org(org_slug)
    config = _config(org)
    flow = _flow(org)
    return_to = flow["r"] if flow is not None else safe_return_to(org, None)
    try:
        if flow is None:
            raise refused("it took too long or was started in another browser")
        response = await _signed_in(org, config, flow)
    except SignInProblem as problem:
        response = await _refusal(org, return_to, problem)
    response.headers.add("Set-Cookie", _flow_cookie(org, "", 0))
    return response
