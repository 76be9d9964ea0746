"""Binds each ``/api/v1/{org}`` request to its org: key, org, scope, then a session on the
org's schema. The request owns the transaction: committed when the response is below 400.

Every view under the API blueprint must declare its scope with ``@requires_scope``; a view
without one is refused, so a forgotten declaration fails closed. A publishable key (scope
``public``) reaches only the views declared ``@requires_scope("read", public=True)``; its
responses are cached apart from secret keys' (the cache key names the audience), and it is
limited per client address too (``FAQ_PUBLIC_KEY_PER_ADDRESS_PER_MINUTE``). An expired key is
refused like an unknown one. Each request notes its key's use (``api.keys.usage``). A read
that returns content declares ``@localized``: its locale is negotiated here (``?locale=``, else
``Accept-Language``), an unserved one refused with one 400 (``served_locale``, MCP's too).

A key presented but unknown or revoked counts as a failed authentication of the client's
address (``client_address``); past ``FAQ_AUTH_FAILURES_PER_MINUTE`` the address gets 429
``rate_limited`` instead of 401, while valid keys from it keep working (a legitimate client
may share the address). Counting fails open when Redis is unreachable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field
from quart import Response, current_app, g, request
from quart_schema import document_headers
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from werkzeug.datastructures import LanguageAccept

from api.audiences.tokens import READER_TOKEN_HEADER
from api.audiences.visibility import reader_audiences
from api.errors import (
    RateLimited,
    ValidationFailed,
    field_error,
)
from api.http.authentication import authenticate, bearer_token, with_reader
from api.http.client_addresses import client_behind_proxies, is_trusted, parse_address
from api.http.etags import ETAG, IF_NONE_MATCH, LIST_READS, list_tag, none_match
from api.http.org_inflight import Slot
from api.http.org_inflight import for_app as org_inflight
from api.http.pagination import CursorCodec
from api.http.rate_limit import RateDecision, RateLimiter
from api.http.response_cache import (
    CACHEABLE_ENDPOINTS,
    ResponseCache,
    has_next_page,
    read_key,
)
from api.keys.usage import KeyUsage
from api.locales import LocaleNotEnabled, Negotiated, negotiate
from tenancy.db import tenant_session
from tenancy.directory import Directory
from tenancy.generations import ITEMS, LISTS, generation_key, initial_generation
from tenancy.keys import is_public
from tenancy.principal import Principal
from tenancy.settings import Settings
from tenancy.transactions import commit, discard_after_commit

F = TypeVar("F", bound=Callable[..., Any])
CACHED_HEADERS = ("Content-Language", ETAG)  # headers of a cached body that depend on it
# The generation each cacheable read keys on (``tenancy.generations``): a question's single
# read survives creates of other questions; the rest change with every write.
ITEM_READS = frozenset({"api.questions.get_question"})
SCOPE_ATTRIBUTE = "_faq_required_scope"
PUBLIC_ATTRIBUTE = "_faq_public_read"
LOCALIZED_ATTRIBUTE = "_faq_localized"
# Appended to the locale part of a cached read's key for publishable keys (published only).
PUBLIC_AUDIENCE = "\x00public"


def audience_part(principal: Principal) -> str:
    """The part of a cached read's key that says what its reader may read (issue 39): none
    for a principal that sees everything, ``PUBLIC_AUDIENCE`` for an anonymous reader, and
    after it the reader's audiences, sorted (slugs: no NUL or comma in them), so that a
    reader's body is never served to another reader or an anonymous one."""
    audiences = reader_audiences(principal)
    if audiences is None:
        return ""
    if not audiences:
        return PUBLIC_AUDIENCE
    return f"{PUBLIC_AUDIENCE}\x00{','.join(sorted(set(audiences)))}"


# The rate decision ``api.http.fast_path`` already counted for a request it handed over (in the
# ASGI scope): the request is counted once.
HANDED_DECISION = "faq.rate_decision"
NOT_HANDED = object()


def requires_scope(scope: str, *, public: bool = False) -> Callable[[F], F]:
    """The scope a view needs; ``public``: a publishable key may call it too (published
    content only: the view checks ``public_audience()``)."""

    def decorator(func: F) -> F:
        setattr(func, SCOPE_ATTRIBUTE, scope)
        if public:
            setattr(func, PUBLIC_ATTRIBUTE, True)
        return func

    return decorator


class LocaleHeaders(BaseModel):
    """The header a localized read negotiates (documented on each: ``@localized``)."""

    model_config = ConfigDict(populate_by_name=True)

    accept_language: str | None = Field(
        default=None,
        alias="Accept-Language",
        description=(
            "The reader's languages (RFC 9110), used when there is no `locale` parameter: the "
            "best one the organization serves (`fr-CH` falls back to `fr`), else its default "
            "locale; the response then carries `Vary: Accept-Language`."
        ),
    )


def localized(func: F) -> F:
    """The read returns content served in a locale: the binding negotiates it for this view
    (``?locale=``, else ``Accept-Language``, else the org's default; ``chosen_locale()``),
    refuses a ``locale`` the org does not serve (400 ``validation_failed``, field ``locale``),
    keys its cached body on it and documents ``Accept-Language`` in the OpenAPI document (the
    view's query model documents ``locale``)."""
    setattr(func, LOCALIZED_ATTRIBUTE, True)
    return document_headers(LocaleHeaders)(func)


def is_localized(view: Any) -> bool:
    """Whether ``view`` was declared ``@localized``."""
    return getattr(view, LOCALIZED_ATTRIBUTE, False) is True


def public_audience() -> bool:
    """The request is made with a publishable key: it sees published content only."""
    return is_public(current_org().scopes)


def key_usage(extensions: dict[str, Any] | None = None) -> KeyUsage:
    """The app's key-use recorder (``extensions``: the app's, when called outside a request)."""
    extensions = current_app.extensions if extensions is None else extensions
    usage: KeyUsage | None = extensions.get("key_usage")
    if usage is None:
        ext: Tenancy = extensions["tenancy"]
        usage = extensions["key_usage"] = KeyUsage(ext.engine)
    return usage


class Tenancy:
    """The app extension holding the engine, the key/org directory and the rate limiter."""

    def __init__(
        self,
        engine: AsyncEngine,
        directory: Directory,
        rate_limiter: RateLimiter | None = None,
        cache: ResponseCache | None = None,
    ) -> None:
        self.engine = engine
        self.directory = directory
        self.rate_limiter = rate_limiter
        self.cache = cache


def tenancy() -> Tenancy:
    ext: Tenancy = current_app.extensions["tenancy"]
    return ext


def current_org() -> Principal:
    org: Principal = g.org
    return org


def db() -> AsyncSession:
    session: AsyncSession = g.db
    return session


def chosen_locale() -> str:
    """The locale this read is served in (``negotiate_locale``); the org's default for
    requests that do not negotiate one."""
    locale: str | None = g.get("locale")
    return locale if locale is not None else current_org().default_locale


def served_locale(
    org: Principal, asked: str | None, accepted: LanguageAccept | None = None
) -> Negotiated:
    """The locale a read by ``org`` is served in (``api.locales.negotiate``): ``asked`` (the
    ``locale`` parameter or argument), else ``accepted`` (``Accept-Language``), else the org's
    default. The one refusal of every door (routes, MCP tools): a locale the org does not
    serve is ``validation_failed`` naming ``locale``."""
    try:
        return negotiate(asked, accepted, org.locales, org.default_locale)
    except LocaleNotEnabled:
        raise ValidationFailed(
            "The locale is not enabled for this organization.",
            details=field_error("locale", "not an enabled locale"),
        ) from None


def negotiate_locale(org: Principal) -> str:
    """The locale of this request's ``@localized`` read (``served_locale``): kept in
    ``g.locale``; ``Vary: Accept-Language`` when that header chose it."""
    chosen = served_locale(org, request.args.get("locale"), request.accept_languages)
    g.locale = chosen.locale
    g.vary_language = chosen.varies
    return chosen.locale


def cursors() -> CursorCodec:
    """The app's cursor codec (signed, keyed by ``FAQ_SECRET_KEY``)."""
    codec: CursorCodec = current_app.extensions["cursors"]
    return codec


def client_address() -> str:
    """The client's address: the peer's, or behind a trusted proxy (``FAQ_TRUSTED_PROXIES``)
    the right-most ``X-Forwarded-For`` hop that is not one (``api.http.client_addresses``); with
    the deprecated ``FAQ_TRUST_FORWARDED_FOR`` alone, the last hop."""
    settings: Settings = current_app.extensions["settings"]
    return client_behind_proxies(
        settings, request.remote_addr, request.headers.getlist("X-Forwarded-For")
    )


def peer_is_trusted_proxy() -> bool:
    """The peer is a proxy whose forwarded headers (``X-Forwarded-For``, ``-Proto``) are
    believed: in ``FAQ_TRUSTED_PROXIES``, or any peer under the deprecated
    ``FAQ_TRUST_FORWARDED_FOR`` alone."""
    settings: Settings = current_app.extensions["settings"]
    networks = settings.trusted_proxy_networks()
    if not networks:
        return settings.faq_trust_forwarded_for
    peer = parse_address(request.remote_addr or "")
    return peer is not None and is_trusted(peer, networks)


async def bind_request_to_org() -> Response | None:
    view = current_app.view_functions[request.endpoint or ""]
    required = getattr(view, SCOPE_ATTRIBUTE, None)
    if required is None:
        raise RuntimeError(f"view {request.endpoint} declares no scope")
    ext = tenancy()
    settings: Settings = current_app.extensions["settings"]
    principal, key, org = await authenticate(
        ext.directory,
        ext.rate_limiter,
        bearer_token(request.headers.get("Authorization", "")),
        g.get("org_slug", ""),
        address=client_address(),
        failures_per_minute=settings.faq_auth_failures_per_minute,
    )
    public = principal.public
    if public:
        g.cors_origins = key.allowed_origins  # api/http/cors.py
    else:
        g.secret_key = True
    cacheable = (
        ext.cache is not None
        and ext.cache.enabled
        and request.method == "GET"
        and request.endpoint in CACHEABLE_ENDPOINTS
    )
    generation: bytes | None = None
    generation_kind = ITEMS if request.endpoint in ITEM_READS else LISTS
    decision: RateDecision | None = None
    # Counted already by ``api.http.fast_path``, which handed the request over:
    handed = cast(dict[str, Any], request.scope).pop(HANDED_DECISION, NOT_HANDED)
    if handed is not NOT_HANDED:
        decision = cast(RateDecision | None, handed)
    elif ext.rate_limiter is not None:
        also_get = generation_key(org.schema_name, generation_kind) if cacheable else None
        if public:
            decision = await ext.rate_limiter.hit_public(
                key.fingerprint,
                org.plan,
                client_address(),
                settings.faq_public_key_per_address_per_minute,
                also_get=also_get,
            )
        else:
            decision = await ext.rate_limiter.hit(key.fingerprint, org.plan, also_get=also_get)
    if decision is not None:
        generation = decision.fetched
        g.rate_headers = decision.headers()
        if not decision.allowed:
            message = (
                "Too many requests from this address with this key."
                if decision.by_address
                else f"Rate limit of {decision.limit} requests per window reached."
            )
            raise RateLimited(
                message,
                headers={**decision.headers(), "Retry-After": str(decision.reset_seconds)},
            )
    # Issue 39: a reader the org's application signed in, beside a publishable key (counted
    # first: a flood of bad tokens spends the address's budget). Secret keys see everything.
    principal = with_reader(principal, org, request.headers.get(READER_TOKEN_HEADER))
    if not (public and getattr(view, PUBLIC_ATTRIBUTE, False)):
        principal.require(required)
    key_usage().seen(key.fingerprint)
    g.org = principal
    locale = negotiate_locale(g.org) if is_localized(view) else ""
    if cacheable and ext.cache is not None and decision is not None:
        if generation is None:
            generation = await initial_generation(org.schema_name, generation_kind)
        if generation is not None:
            audience = f"{locale}{audience_part(principal)}"
            path, variant = read_key(request.path, request.args.items(multi=True), audience)
            if request.endpoint in LIST_READS:  # issue 30: a list's tag is its generation's
                tag = g.list_etag = list_tag(generation, path)
                # A publishable key's search is recorded after the view: its 304 comes later.
                if not public and none_match(request.headers.get(IF_NONE_MATCH), tag):
                    return Response(status=304, headers={ETAG: tag})
            cached = ext.cache.get(org.schema_name, path, generation, variant)
            if cached is not None:
                return Response(
                    cached.body, content_type="application/json", headers=dict(cached.headers)
                )
            g.cache_slot = (org.schema_name, path, generation, variant)
    # Past the cache: what reaches PostgreSQL waits for a place in the org's share.
    await take_org_slot(org.id)
    g.db = tenant_session(ext.engine, org.schema_name)
    return None


async def take_org_slot(org_id: Any) -> None:
    """A place in the org's share of this process (``api.http.org_inflight``), given back in
    ``close_request_session``; 429 when the org's share stays full."""
    slot = await org_inflight(current_app.extensions).acquire(org_id, request.method)
    if slot is None:
        raise RateLimited(
            "Too many requests of this organization in progress.", headers={"Retry-After": "1"}
        )
    g.org_slot = slot


async def finish_request_transaction(response: Response) -> Response:
    session: AsyncSession | None = g.pop("db", None)
    if session is not None:
        try:
            response = await end_transaction(session, response)
        except Exception as error:
            # The commit itself failed (PostgreSQL gone mid-commit): the app's error handlers
            # answer (503 service_unavailable), as for a failure inside the view.
            answer = await current_app.handle_user_exception(error)
            response = cast(Response, await current_app.make_response(answer))
    for name, value in g.get("rate_headers", {}).items():
        response.headers.setdefault(name, value)
    if g.get("vary_language"):
        response.vary.add("Accept-Language")
    principal = g.get("org")
    if isinstance(principal, Principal) and principal.public:
        # Issue 39: what a publishable key reads depends on its reader token; a reader's
        # answer is for that reader's browser only.
        response.vary.add(READER_TOKEN_HEADER)
        if principal.reader is not None:
            response.headers["Cache-Control"] = "private, no-cache"
    return response


async def end_transaction(session: AsyncSession, response: Response) -> Response:
    """Commit after a success (then fill the response cache), roll back after an error."""
    try:
        if response.status_code < 400:
            await commit(session)
            slot: tuple[str, str, bytes, str] | None = g.pop("cache_slot", None)
            cache = tenancy().cache
            if slot is not None and cache is not None and response.status_code == 200:
                body = await response.get_data()
                assert isinstance(body, bytes)
                # A page with a next cursor serves only its own spelling of q (the cursor is
                # signed for it).
                shared = not slot[3] or not has_next_page(body)
                kept = tuple(
                    (name, response.headers[name])
                    for name in CACHED_HEADERS
                    if name in response.headers
                )
                cache.put(slot[0], slot[1], slot[2], body, slot[3], shared=shared, headers=kept)
        else:
            discard_after_commit(session)
            await session.rollback()
    finally:
        await session.close()
    return response


async def close_request_session(_exc: BaseException | None) -> None:
    slot: Slot | None = g.pop("org_slot", None)
    try:
        session: AsyncSession | None = g.pop("db", None)
        if session is not None:
            discard_after_commit(session)
            await session.close()
    finally:
        if slot is not None:
            org_inflight(current_app.extensions).release(slot)
