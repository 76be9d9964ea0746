"""The app factory: where every request enters, and where every error is rendered."""

from __future__ import annotations

import asyncio
import gc
import re
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson
import structlog
from flask.templating import _default_template_ctx_processor as flask_default_template_ctx_processor
from pydantic import BaseModel, ValidationError
from quart import Quart, Request, Response, request
from quart.json.provider import DefaultJSONProvider
from quart_schema import Info, QuartSchema, RequestSchemaValidationError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from werkzeug.exceptions import HTTPException
from werkzeug.routing import RequestRedirect

from api.billing.routes import close_stripe_gateway
from api.billing.stripe_webhook import stripe_webhook
from api.errors import (
    InternalError,
    InvalidJson,
    MethodNotAllowed,
    PayloadTooLarge,
    RouteNotFound,
    ServiceError,
    ServiceUnavailable,
    ValidationErrorCode,
    ValidationFailed,
    field_error,
)
from api.helpcenter.feedback import feedback as help_center_feedback
from api.helpcenter.limits import HelpCenterLimits
from api.helpcenter.llms_routes import hc_llms as help_center_for_agents
from api.helpcenter.oidc import hc_oidc as help_center_oidc_sign_in
from api.helpcenter.routes import hc as help_center_pages
from api.helpcenter.widget import widget as help_center_widget
from api.http.binding import Tenancy
from api.http.docs_ui import configure_docs_ui
from api.http.fast_path import CachedReads
from api.http.observability import end_request, health, note_error, start_request
from api.http.openapi import FaqOpenAPIProvider
from api.http.pagination import CursorCodec
from api.http.rate_limit import RateLimiter
from api.http.response_cache import ResponseCache
from api.http.unread_bodies import UnreadBodies
from api.http.v1 import api_v1, is_operation_on_item_route
from api.mcp.asgi import install as install_mcp
from api.schemas import pydantic_details
from billing.plans import IMPORT_UPLOAD_BYTES
from tenancy.db import make_engine
from tenancy.directory import Directory
from tenancy.generations import on_bump_failed
from tenancy.process_logging import configure_process_logging
from tenancy.redis import connect
from tenancy.settings import Settings, get_settings

log = structlog.get_logger(__name__)
MAX_JSON_DEPTH = 32
TITLE = "FAQ service"
TOO_DEEP = f"The JSON body nests deeper than {MAX_JSON_DEPTH} levels."


# A JSON string, terminated or not (an unterminated one runs to the end: one linear pass, no
# backtracking), and the bytes that are not brackets; both applied by C code, not per byte.
_STRING = re.compile(rb'"[^"\\]*+(?:\\[\s\S]?[^"\\]*+)*+"?')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SQUARE = bytes.maketrans(b"{}", b"[]")


def _nested(levels: int) -> bytes:
    """A pattern for one balanced group at most ``levels`` deep (possessive: no backtracking)."""
    pattern = rb"\[\]"
    for _ in range(levels - 1):
        pattern = rb"\[(?:" + pattern + rb")*+\]"
    return pattern


_WITHIN_DEPTH = re.compile(rb"(?:" + _nested(MAX_JSON_DEPTH) + rb")*+")


def _too_deep(data: bytes) -> bool:
    """Whether the JSON nests deeper than ``MAX_JSON_DEPTH``, without a Python loop over the
    bytes: outside strings keep only the brackets (``{}`` as ``[]``), then match them against
    groups at most 32 deep (the regular expression engine's C loop)."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return False
    if b'"' in data:
        data = _STRING.sub(b"", data)
    brackets = data.translate(_SQUARE, _NOT_BRACKETS)
    if brackets.count(b"[") != brackets.count(b"]"):
        return False  # not JSON: the parser says why
    return _WITHIN_DEPTH.fullmatch(brackets) is None


# An import's upload (issue 29) is streamed to the database by its route, which holds it to the
# org's plan (``billing.plans.IMPORT_UPLOAD_BYTES``); every other body stays under
# ``FAQ_MAX_BODY_BYTES``.
IMPORT_UPLOADS = re.compile(r"^/api/v1/[^/]+/imports/?$")
IMPORT_BODY_TIMEOUT_SECONDS = 600


class ApiRequest(Request):
    def __init__(self, method: str, scheme: str, path: str, *args: Any, **kwargs: Any) -> None:
        if method == "POST" and IMPORT_UPLOADS.match(path):
            kwargs["max_content_length"] = max(IMPORT_UPLOAD_BYTES.values())
            kwargs["body_timeout"] = IMPORT_BODY_TIMEOUT_SECONDS
        super().__init__(method, scheme, path, *args, **kwargs)

    async def get_json(self, force: bool = True, silent: bool = False, cache: bool = True) -> Any:
        """Parse the body as JSON whatever the Content-Type (curl -d sends form encoding).

        Only routes that take a body read it: an empty one is not JSON (SPEC's ``invalid_json``).
        """
        data = await self.get_data(cache=cache, as_text=False)
        assert isinstance(data, bytes)
        if not data:
            if silent:
                return None
            raise InvalidJson(
                "The request body is empty; this route takes a JSON object.",
                details=field_error("body", "is empty"),
            )
        try:
            parsed = orjson.loads(data)  # refuses past 1024 levels itself
        except orjson.JSONDecodeError as exc:
            if exc.msg.startswith("depth limit"):
                raise InvalidJson(TOO_DEEP) from None
            raise InvalidJson(f"The request body is not valid JSON: {exc.msg}.") from None
        if _too_deep(data):
            raise InvalidJson(TOO_DEEP)
        if b"\\u0000" in data:
            # PostgreSQL text cannot hold NUL: refuse it here rather than fail in the database.
            raise body_error()(details=field_error("body", "strings must not contain \\u0000"))
        return parsed


class OrjsonProvider(DefaultJSONProvider):
    @staticmethod
    def _default(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", by_alias=True)
        raise TypeError(f"not JSON serializable: {type(value).__name__}")

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        return orjson.dumps(obj, default=self._default, option=orjson.OPT_NON_STR_KEYS).decode()

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return orjson.loads(s)

    def response(self, *args: Any, **kwargs: Any) -> Response:
        obj = args[0] if len(args) == 1 else (args or kwargs)
        return Response(
            orjson.dumps(obj, default=self._default, option=orjson.OPT_NON_STR_KEYS),
            content_type="application/json",
        )


def is_unavailable(error: BaseException) -> bool:
    """PostgreSQL unreachable, restarting or its connection lost, or a statement cancelled by
    the request's statement_timeout (SQLSTATE 57014): a clean 503, not a 500."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    unavailable = (
        asyncpg.exceptions.QueryCanceledError,
        OperationalError,
        InterfaceError,
        ConnectionError,
        TimeoutError,
        asyncpg.PostgresConnectionError,
        asyncpg.CannotConnectNowError,
        asyncpg.exceptions.AdminShutdownError,
        asyncpg.exceptions.ConnectionDoesNotExistError,
    )
    if isinstance(error, unavailable):
        return True
    cause = error.__cause__ or error.__context__
    return cause is not None and cause is not error and is_unavailable(cause)


def allowed_methods(app: Quart) -> list[str]:
    """The methods the request's path answers (``Allow``, RFC 9110): each method the router
    matches, except where the item route matched an operation segment (``…/categories/merge``
    has the operation's methods, not the item's)."""
    adapter = app.create_url_adapter(request)
    if adapter is None:
        return []
    methods = []
    for method in sorted({m for rule in app.url_map.iter_rules() for m in rule.methods or ()}):
        try:
            rule, values = adapter.match(method=method, return_rule=True)
        except RequestRedirect:
            methods.append(method)
        except HTTPException:
            continue
        else:
            if not is_operation_on_item_route(rule, values):
                methods.append(method)
    return methods


def method_not_allowed(app: Quart, error: ServiceError | None = None) -> ServiceError:
    error = error or MethodNotAllowed()
    error.headers.setdefault("Allow", ", ".join(allowed_methods(app)))
    return error


class FaqApp(Quart):
    async def make_default_options_response(self) -> Response:
        """OPTIONS names the same methods as a 405's ``Allow``."""
        return self.response_class("", headers={"Allow": ", ".join(allowed_methods(self))})


def body_error() -> type[ServiceError]:
    """Webhook endpoints answer body errors with ``validation_error`` (SPEC), others not."""
    blueprints = request.blueprints if request else []
    return ValidationErrorCode if "api.webhooks" in blueprints else ValidationFailed


async def refuse_nul_characters() -> None:
    """NUL cannot reach PostgreSQL text: refuse it in the path and query up front."""
    if "\x00" in request.path:
        raise RouteNotFound()
    for name, value in request.args.items(multi=True):
        if "\x00" in name or "\x00" in value:
            raise body_error()(details=field_error(name, "must not contain NUL"))


async def bare_no_content(response: Response) -> Response:
    """A 204 has no body, so no Content-Type and no Content-Length (RFC 9110)."""
    if response.status_code == 204:
        response.headers.pop("Content-Type", None)
        response.headers.pop("Content-Length", None)
    return response


def render_error(error: ServiceError) -> Response:
    note_error(error.code)
    response = Response(
        orjson.dumps(error.body()), status=error.status, content_type="application/json"
    )
    for name, value in error.headers.items():
        response.headers[name] = value
    return response


def register_error_handlers(app: Quart) -> None:
    @app.errorhandler(ServiceError)
    async def on_api_error(error: ServiceError) -> Response:
        if isinstance(error, MethodNotAllowed):
            error = method_not_allowed(app, error)
        return render_error(error)

    @app.errorhandler(RequestSchemaValidationError)
    async def on_schema_error(error: RequestSchemaValidationError) -> Response:
        cause = error.validation_error
        if isinstance(cause, ValidationError):
            details = pydantic_details(cause)
        else:
            details = [{"field": "body", "issue": "the body must be a JSON object"}]
        return render_error(body_error()(details=details))

    @app.errorhandler(HTTPException)
    async def on_http_error(error: HTTPException) -> Response:
        mapped: ServiceError
        if error.code == 404:
            mapped = RouteNotFound()
        elif error.code == 405:
            mapped = method_not_allowed(app)
        elif error.code == 413:
            mapped = PayloadTooLarge()
        elif error.code == 400:
            mapped = body_error()("The request could not be read.")
        else:
            mapped = ServiceError(error.description)
            mapped.status = error.code or 500
        return render_error(mapped)

    @app.errorhandler(Exception)
    async def on_unexpected(error: Exception) -> Response:
        if is_unavailable(error):
            log.warning("dependency_unavailable", error=type(error).__name__)
            return render_error(ServiceUnavailable(headers={"Retry-After": "1"}))
        log.error("unhandled_error", exc_info=error)
        return render_error(InternalError())


def skip_pydantic_for_plain_results(app: Quart) -> None:
    """Views return plain dicts (already in the public shape). quart-schema would pass each one
    through ``TypeAdapter(dict).dump_python`` (a new TypeAdapter and a full copy per response,
    about a fifth of a list request's CPU): plain dicts and lists go straight to orjson;
    pydantic models, dataclasses and the rest still take quart-schema's path; a ``Response``
    is returned as it is (what ``Quart.make_response`` does with one)."""
    schema_make_response = app.make_response  # quart-schema's wrapper
    plain_make_response = Quart.make_response.__get__(app, Quart)

    async def make_response(result: Any) -> Any:
        if type(result) is app.response_class:
            return result  # a Response as it is (the help center's pages): nothing to convert
        value = result[0] if isinstance(result, tuple) else result
        headers = result[2] if isinstance(result, tuple) and len(result) == 3 else None
        if type(value) in (dict, list) and (headers is None or type(headers) is dict):
            return await plain_make_response(result)
        return await schema_make_response(result)

    app.make_response = make_response  # type: ignore[method-assign]


def drop_flask_template_processors(app: Quart) -> None:
    """Each blueprint brings Flask's default template context processor (Quart's blueprints
    are Flask's sansio ones). Under Quart it always returns ``{}`` (Flask's contexts are never
    pushed), but it is sync, so every ``render_template`` under a blueprint sent it to the
    thread pool: a thread hop per help-center page, more than the rest of a cached page.
    Quart's own (async) default processor stays and provides ``g``, ``request``, ``session``."""
    for name, processors in app.template_context_processors.items():
        app.template_context_processors[name] = [
            p for p in processors if p is not flask_default_template_ctx_processor
        ]


def create_app(settings: Settings | None = None) -> Quart:
    settings = settings or get_settings()
    configure_process_logging(settings.faq_log_level)  # JSON, or FAQ_LOG_FORMAT=console
    app = FaqApp("faq")
    app.request_class = ApiRequest
    app.config.update(MAX_CONTENT_LENGTH=settings.faq_max_body_bytes)
    configure_docs_ui(app, title=TITLE)
    QuartSchema(
        app,
        info=Info(title=TITLE, version="1.0.0"),
        swagger_ui_path=None,  # api/http/docs_ui.py serves /docs
        redoc_ui_path=None,
        scalar_ui_path=None,
        security_schemes={"bearer": {"type": "http", "scheme": "bearer"}},
        security=[{"bearer": []}],
        openapi_provider_class=FaqOpenAPIProvider,
    )
    app.json = OrjsonProvider(app)
    skip_pydantic_for_plain_results(app)

    app.before_request(start_request)
    app.before_request(refuse_nul_characters)
    app.after_request(end_request)
    app.after_request(bare_no_content)
    app.register_blueprint(health)
    app.register_blueprint(api_v1)
    app.register_blueprint(stripe_webhook)
    app.register_blueprint(help_center_feedback)
    app.register_blueprint(help_center_pages)
    app.register_blueprint(help_center_widget)  # /hc/widget.js (issue 41)
    app.register_blueprint(help_center_for_agents)  # llms.txt, Markdown twins
    app.register_blueprint(help_center_oidc_sign_in)  # sign in with OpenID Connect (issue 39)
    register_error_handlers(app)
    drop_flask_template_processors(app)
    # ASGI middleware: a help-center request over its budgets is refused before Quart;
    # ``UnreadBodies`` drains what a refusal left unread; the fast path (outermost) answers
    # cached API reads (GETs, no body).
    install_mcp(app, settings)  # /mcp/{org}: the MCP server of each org (POSTs only)
    app.asgi_app = HelpCenterLimits(app)  # type: ignore[method-assign]
    # Around everything that may answer a request with a body: a response sent before its
    # body was read keeps the connection usable.
    app.asgi_app = UnreadBodies(  # type: ignore[method-assign]
        app.asgi_app, settings.faq_max_body_bytes
    )
    app.asgi_app = CachedReads(app)  # type: ignore[method-assign]

    settings.require_secret_key()  # fail at start-up, not on the first request
    app.extensions["settings"] = settings
    app.extensions["cursors"] = CursorCodec(*settings.secret_keys())

    @app.before_serving
    async def open_resources() -> None:
        engine = make_engine(settings)
        directory = Directory(engine)
        await directory.start()
        client = connect(settings.require_redis_url())
        limiter = RateLimiter(
            client,
            window_seconds=settings.faq_rate_limit_window_seconds,
            overrides=settings.faq_rate_limits,
            address_secret=settings.require_secret_key(),
        )
        cache = ResponseCache(
            settings.faq_response_cache_mb * 2**20, settings.faq_response_cache_seconds
        )
        on_bump_failed(cache.clear)
        app.extensions["tenancy"] = Tenancy(engine, directory, limiter, cache)
        # Everything loaded so far lives as long as the process: keep it out of every GC pass
        # (shorter collections, fewer latency spikes under load).
        gc.collect()
        gc.freeze()
        app.extensions["redis"] = client

    @app.after_serving
    async def close_resources() -> None:
        # Each step is bounded (a pod's shutdown must not hang on one): a step past its time
        # is logged and the next one runs.
        ext: Tenancy = app.extensions["tenancy"]
        usage = app.extensions.get("key_usage")
        steps: list[tuple[str, Callable[[], Awaitable[Any]], float]] = [
            ("directory", ext.directory.stop, 1.0),
            ("key_usage", usage.drain if usage is not None else lambda: asyncio.sleep(0), 1.0),
            ("engine", ext.engine.dispose, 2.0),
            ("redis", app.extensions["redis"].aclose, 0.5),
            ("stripe", lambda: close_stripe_gateway(app), 0.5),
        ]
        for name, step, seconds in steps:
            try:
                await asyncio.wait_for(step(), seconds)
            except TimeoutError:
                log.warning("shutdown_step_timed_out", step=name, seconds=seconds)

    return app
