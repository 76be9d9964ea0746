"""Cache hits of the hot reads, answered before Quart builds its request (issue 14).

A ``GET`` of a question or category list or single read (``CACHEABLE_ENDPOINTS``) made with a
secret key is served here, in the ASGI call, when its body is in the response cache for the
org's current generation: no request context, no routing through Quart's dispatch, no hooks.
A single read of a question (no parameter but ``locale``) is served here when it is not
cached too, read as its view reads it (``read_json.get_question_json``), and cached (when the
cache is on).
It applies the same rules as the Quart path, through the same functions (``api.http.binding``:
the key and the org as this process holds them, ``Directory.cached``, never a lookup here;
the scope, the rate limit with the generation in its round trip, the key's use;
``api.locales``: the locale, for a view declared ``@localized``; ``api.http.response_cache``:
the key and the entry;
``api.http.observability``: the request id, the metrics and the access log line) and answers the
same status, body and headers. An entry keeps its ``ETag`` (``api.http.etags``): a read whose
``If-None-Match`` names it is answered 304 here (issue 30).

Anything else goes to Quart unchanged: another route or method, a publishable key (CORS and
analytics are Quart's hooks), no key, a refused one or one this process does not hold, a NUL,
a locale the org does not serve, no entry in the cache. Once this path has counted the
request against the key's rate limit it hands the decision over in the ASGI scope
(``HANDED_DECISION``), so the request is counted once: a refusal (429) or an entry of an
older generation is then answered by Quart.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from quart import Quart
from werkzeug.datastructures import Headers
from werkzeug.exceptions import HTTPException
from werkzeug.routing import MapAdapter, Rule
from werkzeug.sansio.request import Request

from api.http.authentication import bearer_token, key_accepted, principal_of
from api.http.binding import (
    HANDED_DECISION,
    ITEM_READS,
    SCOPE_ATTRIBUTE,
    Tenancy,
    is_localized,
    key_usage,
)
from api.http.etags import ETAG, IF_NONE_MATCH, for_body_off_loop, none_match
from api.http.observability import bind_request_id, observe, request_id_for
from api.http.org_inflight import for_app as org_inflight
from api.http.response_cache import CACHEABLE_ENDPOINTS, Cached, read_key
from api.http.v1 import is_operation_on_item_route
from api.locales import LocaleNotEnabled, Negotiated, negotiate
from api.questions.read_json import get_question_json
from tenancy.db import tenant_session
from tenancy.directory import OrgRecord
from tenancy.generations import ITEMS, LISTS, generation_key

PREFIX = "/api/v1/"
QUESTION_READ = "api.questions.get_question"
Answer = tuple[list[tuple[bytes, bytes]], bytes, str, int]  # headers, body, route, status


class CachedReads:
    """ASGI middleware in front of the app (``app.asgi_app``): serves cache hits itself."""

    def __init__(self, app: Quart) -> None:
        self.app = app
        self.inner = app.asgi_app
        self._adapter: MapAdapter | None = None
        self.served = 0  # hits answered here (tests and the bench read it)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "GET"
            and scope["path"].startswith(PREFIX)
            and not scope.get("root_path")
            and "tenancy" in self.app.extensions
        ):
            started = time.perf_counter()
            answer = await self._answer(cast(dict[str, Any], scope))
            if answer is not None:
                headers, body, route, status = answer
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                self.served += 1
                observe("GET", route, status, time.perf_counter() - started, scope["path"])
                return
        await self.inner(scope, receive, send)

    def _match(self, path: str, caching: bool) -> tuple[Rule, Mapping[str, Any]] | None:
        """The route of a read this path serves: a cached read (with the cache on), a single
        read of a question (cached or not)."""
        if self._adapter is None:
            self._adapter = self.app.url_map.bind("")
        try:
            rule, values = self._adapter.match(path, method="GET", return_rule=True)
        except HTTPException:  # no route, another method, a redirect: Quart answers
            return None
        served = CACHEABLE_ENDPOINTS if caching else (QUESTION_READ,)
        if rule.endpoint not in served or is_operation_on_item_route(rule, values):
            return None
        return rule, values

    async def _read_question(
        self, ext: Tenancy, org: OrgRecord, ref: str, locale: str
    ) -> Cached | None:
        """The single read's body from PostgreSQL (``read_json.get_question_json``, what the
        view sends), in a place of the org's share (``api.http.org_inflight``); None when Quart
        should answer (the question does not exist, the share is full, PostgreSQL fails)."""
        budgets = org_inflight(self.app.extensions)
        slot = await budgets.acquire(org.id, "GET")
        if slot is None:
            return None
        try:
            async with tenant_session(ext.engine, org.schema_name) as session:
                # Secret keys only (a publishable key's read goes to Quart): drafts shown.
                _, served, _, body = await get_question_json(session, ref, locale, drafts=True)
        except Exception:  # not found (404), PostgreSQL unreachable (503): Quart answers
            return None
        finally:
            budgets.release(slot)
        return Cached(body, (("Content-Language", served), (ETAG, await for_body_off_loop(body))))

    async def _answer(self, scope: dict[str, Any]) -> Answer | None:
        """The cached response to this request, or None (Quart answers it)."""
        extensions = self.app.extensions
        ext: Tenancy = extensions["tenancy"]
        limiter = ext.rate_limiter
        if limiter is None:
            return None
        cache = ext.cache if ext.cache is not None and ext.cache.enabled else None
        matched = self._match(scope["path"], caching=cache is not None)
        if matched is None:
            return None
        rule, values = matched
        headers = Headers()
        for name, value in scope["headers"]:
            headers.add(name.decode("latin1").title(), value.decode("latin1"))
        token = bearer_token(headers.get("Authorization", ""))
        if token is None:
            return None
        held = ext.directory.cached(token, values["org"])
        if held is None:
            return None  # Quart looks them up
        key, org = held
        view = self.app.view_functions[rule.endpoint]
        if not key_accepted(key, token) or org.id != key.org_id:
            return None  # Quart refuses it
        # The same principal Quart's binding makes; a publishable key's read goes to Quart.
        principal = principal_of(key, org)
        if principal.public or not principal.may(getattr(view, SCOPE_ATTRIBUTE)):
            return None
        request = Request(
            "GET",
            scope["scheme"],
            scope.get("server"),
            "",
            scope["path"],
            scope["query_string"],
            headers,
            None,
        )
        args = request.args
        if "\x00" in scope["path"] or any(
            "\x00" in k or "\x00" in v for k, v in args.items(multi=True)
        ):
            return None
        # The binding's rule: a view declared ``@localized`` keys on its negotiated locale.
        chosen = Negotiated("", False)
        if is_localized(view):
            try:
                chosen = negotiate(
                    args.get("locale"), request.accept_languages, org.locales, org.default_locale
                )
            except LocaleNotEnabled:
                return None
        path, variant = read_key(request.path, args.items(multi=True), chosen.locale)
        kept = cache is not None and cache.holds(org.schema_name, path, variant)
        # A single read of a question with no other parameter is read here on a miss too (and
        # with the cache off).
        readable = rule.endpoint == QUESTION_READ and set(args) <= {"locale"}
        if not kept and not readable:
            return None  # not counted yet: Quart counts it
        kind = ITEMS if rule.endpoint in ITEM_READS else LISTS
        decision = await limiter.hit(
            key.fingerprint,
            org.plan,
            also_get=generation_key(org.schema_name, kind) if cache is not None else None,
        )
        generation = decision.fetched if decision is not None else None
        found: Cached | None = None
        # With the cache on, its generation is needed (Quart makes the org's first one).
        if decision is not None and decision.allowed and (cache is None or generation is not None):
            if cache is not None and generation is not None and kept:
                found = cache.get(org.schema_name, path, generation, variant)
            if found is None and readable:
                locale = chosen.locale or org.default_locale
                found = await self._read_question(ext, org, values["ref"], locale)
                if found is not None and cache is not None and generation is not None:
                    schema = org.schema_name
                    cache.put(schema, path, generation, found.body, variant, headers=found.headers)
        if found is None or decision is None:
            scope[HANDED_DECISION] = decision
            return None
        key_usage(extensions).seen(key.fingerprint)
        request_id = request_id_for(headers.get("X-Request-Id", ""))
        bind_request_id(request_id)
        body, status = found.body, 200
        out = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if none_match(headers.get(IF_NONE_MATCH), dict(found.headers).get(ETAG)):
            body, status, out = b"", 304, []  # issue 30: the client's copy is current
        out += [(name.lower().encode(), value.encode("latin1")) for name, value in found.headers]
        rate = decision.headers()
        out += [(name.lower().encode(), value.encode()) for name, value in rate.items()]
        if chosen.varies:
            out.append((b"vary", b"Accept-Language"))
        out.append((b"x-request-id", request_id.encode("latin1")))
        return out, body, rule.rule, status
