"""What the help center asks of an org's OpenID Connect provider (issue 39), and how it checks
the answers; ``api.helpcenter.oidc`` runs the sign-in with them.

- **Every call** goes to an https URL whose host is resolved and checked like a webhook's
  (``api.webhooks.url_safety.resolve_checked``: no private, loopback or metadata address unless
  ``FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS``), and is made to those checked addresses only (the
  connection names the address; TLS and ``Host`` name the host), so DNS rebinding between the
  check and the connection changes nothing. No redirects, ``TIMEOUT_SECONDS`` in all, at most
  ``MAX_BYTES`` read; TLS trusts ``FAQ_WEBHOOK_CA_BUNDLE`` too when it is set.
- **Discovery** (``{issuer}/.well-known/openid-configuration``) and the **JWKS** are kept per
  URL for ``CACHE_SECONDS`` (at most ``CACHE_ENTRIES`` of them); an ID token signed by a key
  the kept JWKS lacks fetches it again (at most once per ``JWKS_REFRESH_SECONDS``: a provider
  that rotated its keys is followed, a forged ``kid`` cannot make us hammer it).
- **The ID token** is verified with PyJWT: RS256, ES256 or PS256 only, a key of the
  provider's JWKS, ``iss`` the configured issuer, ``aud`` the client id (and ``azp`` when the
  token names several audiences), ``exp`` and ``iat`` (60 s of clock skew), ``nonce`` the one
  this sign-in sent.
- **The reader** is the ID token's ``sub``, ``email``, ``name`` and its audiences: the claim
  the org named (``audiencesClaim``), a list of strings or one space-separated string, of
  which only slug-shaped values count. The claim is read from the ID token only (no userinfo
  call): providers put custom claims there when asked, and one signed document is one check.

A refusal is a ``SignInProblem``: 401 when the provider or its answer refused the sign-in, 502
when the provider could not be asked or answered nonsense. Never a session, never a 500.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import re
import ssl
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
import jwt
import orjson
from yarl import URL

from api.audiences.tokens import MAX_AUDIENCES
from api.webhooks.url_safety import UnsafeUrl, parse_url, resolve_checked
from tenancy.loop_resources import per_loop
from tenancy.principal import Reader
from tenancy.settings import Settings

DISCOVERY_PATH = "/.well-known/openid-configuration"
TIMEOUT_SECONDS = 5.0
MAX_BYTES = 64 * 1024
CACHE_SECONDS = 600
CACHE_ENTRIES = 256
JWKS_REFRESH_SECONDS = 30
ALGORITHMS = ("RS256", "ES256", "PS256")
LEEWAY_SECONDS = 60
MAX_ID_TOKEN_BYTES = 16 * 1024
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_ERROR_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HTTP = "helpcenter.oidc.http"


class SignInProblem(Exception):
    """The sign-in cannot go on: ``status`` 401 (refused) or 502 (the provider failed)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def refused(reason: str) -> SignInProblem:
    return SignInProblem(401, f"The sign-in was refused: {reason}. Please try again.")


def unreachable(reason: str) -> SignInProblem:
    return SignInProblem(
        502, f"The identity provider could not be asked to sign you in: {reason}. Try again later."
    )


def error_code(value: str) -> str:
    """A provider's error code as shown to a reader (anything odd: ``unknown``)."""
    return value if _ERROR_CODE.match(value) else "unknown"


@dataclass(frozen=True)
class Provider:
    """What discovery says about the provider."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    secret_in_body: bool  # client_secret_post, when the provider lists it and not basic


# ---- HTTP ------------------------------------------------------------------------------------


async def _close(session: aiohttp.ClientSession) -> None:
    await session.close()


def _session() -> aiohttp.ClientSession:
    return per_loop(_HTTP, lambda: aiohttp.ClientSession(auto_decompress=False), _close)


@lru_cache(maxsize=4)
def _tls(ca_bundle: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_bundle:
        context.load_verify_locations(cafile=ca_bundle)
    return context


async def _body(response: aiohttp.ClientResponse) -> Any:
    """The JSON body, read up to ``MAX_BYTES`` (None when it is not JSON)."""
    if (response.content_length or 0) > MAX_BYTES:
        raise unreachable(f"its answer is over {MAX_BYTES} bytes")
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(16 * 1024):
        size += len(chunk)
        if size > MAX_BYTES:
            raise unreachable(f"its answer is over {MAX_BYTES} bytes")
        chunks.append(chunk)
    try:
        return orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError:
        return None


async def fetch(
    settings: Settings,
    url: str,
    *,
    form: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, Any]:
    """GET ``url`` (POST ``form`` when given): the status and the JSON body (see the module)."""
    try:
        target = await resolve_checked(
            url, allow_private=settings.faq_webhook_allow_private_networks
        )
    except UnsafeUrl as error:
        raise unreachable(f"{urlsplit(url).netloc} is not allowed ({error})") from None
    sent = {"Accept": "application/json", "Host": urlsplit(url).netloc, **(headers or {})}
    named = parse_url(url).literal is None
    failure = "no answer"
    try:
        async with asyncio.timeout(TIMEOUT_SECONDS):
            for address in target.addresses:
                try:
                    async with _session().request(
                        "POST" if form is not None else "GET",
                        URL(url).with_host(str(address)),
                        data=form,
                        headers=sent,
                        ssl=_tls(settings.faq_webhook_ca_bundle),
                        server_hostname=target.host if named else None,
                        allow_redirects=False,
                    ) as response:
                        return response.status, await _body(response)
                except aiohttp.ClientConnectorError as error:  # the next address, if any
                    failure = f"{target.host} cannot be reached ({type(error).__name__})"
    except TimeoutError:
        failure = f"{target.host} did not answer within {TIMEOUT_SECONDS:g} seconds"
    except (aiohttp.ClientError, OSError, ssl.SSLError) as error:
        failure = f"{target.host} failed to answer ({type(error).__name__})"
    raise unreachable(failure)


_documents: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()


async def _document(settings: Settings, url: str, *, fresher_than: float = CACHE_SECONDS) -> Any:
    """A JSON document of the provider (discovery, JWKS), kept (see the module)."""
    now = time.monotonic()
    kept = _documents.get(url)
    if kept is not None and now - kept[0] < fresher_than:
        return kept[1]
    status, body = await fetch(settings, url)
    if status != 200 or not isinstance(body, dict):
        raise unreachable(f"{urlsplit(url).path} answered {status}, not a JSON document")
    _documents[url] = (now, body)
    _documents.move_to_end(url)
    while len(_documents) > CACHE_ENTRIES:
        _documents.popitem(last=False)
    return body


def forget_documents() -> None:
    """Drop every kept document (tests; a provider moved)."""
    _documents.clear()


# ---- discovery, authorization, token exchange -----------------------------------------------


def _https(document: Mapping[str, Any], name: str) -> str:
    value = document.get(name)
    if not isinstance(value, str):
        raise unreachable(f"its discovery document has no {name}")
    try:
        parse_url(value)
    except UnsafeUrl as error:
        raise unreachable(f"its {name} is not usable ({error})") from None
    return value


async def discover(settings: Settings, issuer: str) -> Provider:
    document = await _document(settings, issuer.rstrip("/") + DISCOVERY_PATH)
    if document.get("issuer") != issuer:
        raise unreachable("its discovery document names another issuer")
    methods = document.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    return Provider(
        issuer=issuer,
        authorization_endpoint=_https(document, "authorization_endpoint"),
        token_endpoint=_https(document, "token_endpoint"),
        jwks_uri=_https(document, "jwks_uri"),
        secret_in_body="client_secret_basic" not in methods and "client_secret_post" in methods,
    )


def code_challenge(verifier: str) -> str:
    """PKCE S256 (RFC 7636): base64url(SHA-256(verifier)), unpadded."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(
    provider: Provider,
    *,
    client_id: str,
    redirect_uri: str,
    scopes: str,
    state: str,
    nonce: str,
    verifier: str,
) -> str:
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": scopes,
            "state": state,
            "nonce": nonce,
            "code_challenge": code_challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    joiner = "&" if "?" in provider.authorization_endpoint else "?"
    return f"{provider.authorization_endpoint}{joiner}{query}"


async def exchange_code(
    settings: Settings,
    provider: Provider,
    *,
    client_id: str,
    client_secret: str | None,
    code: str,
    redirect_uri: str,
    verifier: str,
) -> dict[str, Any]:
    """The token endpoint's answer to the code (with the PKCE verifier). The client signs in
    with HTTP Basic (``client_secret_basic``, RFC 6749 2.3.1: each part form-encoded), in the
    body when the provider takes only that, or not at all for a public client."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    }
    headers = {}
    if client_secret is None or provider.secret_in_body:
        form["client_id"] = client_id
        if client_secret is not None:
            form["client_secret"] = client_secret
    else:
        pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    status, body = await fetch(settings, provider.token_endpoint, form=form, headers=headers)
    answer = body if isinstance(body, dict) else {}
    if status in (400, 401) and isinstance(answer.get("error"), str):
        code_name = error_code(answer["error"])
        raise refused(f"the identity provider did not accept the sign-in ({code_name})")
    if status != 200 or not isinstance(answer.get("id_token"), str):
        raise unreachable(f"its token endpoint answered {status} without an ID token")
    return answer


# ---- the ID token ----------------------------------------------------------------------------


def _jwk_of(jwks: Mapping[str, Any], kid: Any, alg: str) -> Mapping[str, Any] | None:
    """The JWK ``kid`` names (any, when there is one key and no ``kid``) that can check
    ``alg`` signatures."""
    kty = "EC" if alg.startswith("ES") else "RSA"
    listed = jwks.get("keys")
    keys = [
        k
        for k in (listed if isinstance(listed, list) else [])
        if isinstance(k, dict)
        and k.get("kty") == kty
        and k.get("use", "sig") == "sig"
        and k.get("alg", alg) == alg
    ]
    if kid is None:
        return keys[0] if len(keys) == 1 else None
    return next((k for k in keys if k.get("kid") == kid), None)


async def _signing_key(settings: Settings, provider: Provider, kid: Any, alg: str) -> Any:
    jwk = _jwk_of(await _document(settings, provider.jwks_uri), kid, alg)
    if jwk is None:  # perhaps rotated since the JWKS was kept
        fresh = await _document(settings, provider.jwks_uri, fresher_than=JWKS_REFRESH_SECONDS)
        jwk = _jwk_of(fresh, kid, alg)
    if jwk is None:
        raise refused("the ID token is signed with a key the identity provider does not list")
    try:
        return jwt.PyJWK(dict(jwk), algorithm=alg).key
    except (jwt.PyJWTError, ValueError, TypeError, KeyError):
        raise refused(f"the identity provider's {alg} key cannot be read") from None


# Why PyJWT refused an ID token, in the reader's words (the first kind that fits).
_ID_TOKEN_PROBLEMS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ExpiredSignatureError, "the ID token has expired"),
    (jwt.ImmatureSignatureError, "the ID token was issued in the future"),
    (jwt.InvalidAudienceError, "the ID token was made for another application (aud)"),
    (jwt.InvalidIssuerError, "the ID token comes from another issuer (iss)"),
    (jwt.InvalidSignatureError, "the ID token's signature does not verify"),
)


def _id_token_problem(error: jwt.PyJWTError) -> str:
    if isinstance(error, jwt.MissingRequiredClaimError):
        return f"the ID token has no {error.claim!r} claim"
    found = (reason for kind, reason in _ID_TOKEN_PROBLEMS if isinstance(error, kind))
    return next(found, f"the ID token cannot be read ({type(error).__name__})")


async def verify_id_token(
    settings: Settings, provider: Provider, token: str, *, client_id: str, nonce: str
) -> dict[str, Any]:
    """The ID token's claims, verified (see the module), else a 401 ``SignInProblem``."""
    if len(token) > MAX_ID_TOKEN_BYTES:
        raise refused(f"the ID token is longer than {MAX_ID_TOKEN_BYTES} bytes")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise refused("the ID token is not a JWT") from None
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise refused(f"the ID token's algorithm {str(alg)[:20]!r} is not accepted")
    key = await _signing_key(settings, provider, header.get("kid"), alg)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[alg],
            audience=client_id,
            issuer=provider.issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["iss", "sub", "aud", "exp", "iat"]},
        )
    except jwt.PyJWTError as error:
        raise refused(_id_token_problem(error)) from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise refused("the ID token was made for another application (azp)")
    sent = claims.get("nonce")
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), nonce.encode()):
        raise refused("the ID token does not belong to this sign-in (nonce)")
    return claims


def audience_slugs(value: Any) -> tuple[str, ...]:
    """The audience slugs a claim holds: a list of strings or one space-separated string;
    other values and shapes count for nothing."""
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list):
        return ()
    slugs = (v for v in items if isinstance(v, str) and len(v) <= 100 and _SLUG.match(v))
    return tuple(dict.fromkeys(slugs))[:MAX_AUDIENCES]


def reader_of(claims: Mapping[str, Any], audiences_claim: str | None) -> Reader:
    """The reader an ID token's claims sign in."""
    sub = claims.get("sub")
    if not isinstance(sub, str) or not 0 < len(sub) <= 255:
        raise refused("the ID token's sub is not a string of 1 to 255 characters")
    email, name = claims.get("email"), claims.get("name") or claims.get("preferred_username")
    audiences = audience_slugs(claims.get(audiences_claim)) if audiences_claim else ()
    return Reader(
        sub,
        audiences,
        email if isinstance(email, str) and len(email) <= 320 else None,
        name if isinstance(name, str) and len(name) <= 200 else None,
    )
