"""Request ids, access logs, Prometheus metrics, and the health endpoints."""

from __future__ import annotations

import time
import uuid
from typing import Any

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest
from quart import Blueprint, Response, current_app, g, has_request_context, request
from quart_schema import hide
from sqlalchemy import text

from api.errors import ServiceUnavailable

log = structlog.get_logger("faq.access")

REQUESTS = Counter(
    "faq_http_requests_total", "HTTP requests by route and status", ["method", "route", "status"]
)
LATENCY = Histogram(
    "faq_http_request_duration_seconds",
    "HTTP request latency by route",
    ["method", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

# The labelled children, by their labels: ``labels()`` costs a lock and a few dict and string
# operations per request. Routes are the app's rules ("unmatched" otherwise), methods and
# statuses few: these stay small.
_REQUEST_CHILDREN: dict[tuple[str, str, int], Any] = {}
_LATENCY_CHILDREN: dict[tuple[str, str], Any] = {}

health = Blueprint("health", __name__)
MAX_LOGGED_PATH = 256  # of an unmatched request's path, in its log line


def _route() -> str:
    rule = request.url_rule
    return rule.rule if rule is not None else "unmatched"


def _printable(text: str) -> str:
    """``text`` with non-printable characters escaped (a decoded ``%0A`` forges no line)."""
    return (
        text
        if text.isprintable()
        else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    )


def request_id_for(incoming: str) -> str:
    """The request's id: the client's ``X-Request-Id`` when it is short and printable, else a
    new one."""
    return incoming if 0 < len(incoming) <= 128 and incoming.isprintable() else uuid.uuid4().hex


def note_error(code: str) -> None:
    """The error code this request answers with, for its access log line."""
    if has_request_context():
        g.error_code = code


def bind_request_id(request_id: str) -> None:
    """The request's id on every log line of the request."""
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id=request_id)


def observe(
    method: str,
    route: str,
    status: int,
    elapsed: float,
    path: str | None = None,
    error: str | None = None,
) -> None:
    """Count a request in the metrics and write its access log line: with ``path``, what was
    asked (the metrics' label is the route, ``unmatched`` when none matched), and with
    ``error`` the error code a 4xx/5xx answered (issue 41: the console's line says both)."""
    counter = _REQUEST_CHILDREN.get((method, route, status))
    if counter is None:
        counter = _REQUEST_CHILDREN[(method, route, status)] = REQUESTS.labels(
            method, route, str(status)
        )
    counter.inc()
    latency = _LATENCY_CHILDREN.get((method, route))
    if latency is None:
        latency = _LATENCY_CHILDREN[(method, route)] = LATENCY.labels(method, route)
    latency.observe(elapsed)
    fields: dict[str, Any] = {"method": method, "route": route}
    if path is not None:
        fields["path"] = _printable(path[:MAX_LOGGED_PATH])
    fields["status"] = status
    fields["duration_ms"] = round(elapsed * 1000, 2)
    if error is not None and status >= 400:
        fields["error"] = error
    log.info("request", **fields)


async def start_request() -> None:
    g.request_id = request_id_for(request.headers.get("X-Request-Id", ""))
    g.started = time.perf_counter()
    bind_request_id(g.request_id)


async def end_request(response: Response) -> Response:
    response.headers["X-Request-Id"] = g.get("request_id") or uuid.uuid4().hex
    started = g.get("started")
    if started is not None:
        elapsed = time.perf_counter() - started
        error = g.get("error_code")
        observe(request.method, _route(), response.status_code, elapsed, request.path, error)
    return response


@health.get("/healthz")
@hide
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health.get("/readyz")
@hide
async def readyz() -> dict[str, Any]:
    from api.answers.semantic import semantic_status
    from api.http.binding import tenancy

    try:
        async with tenancy().engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        await current_app.extensions["redis"].ping()
        semantic = await semantic_status(tenancy().engine)
    except Exception as exc:
        raise ServiceUnavailable("PostgreSQL or Redis is not reachable.") from exc
    if semantic.available:
        return {"status": "ready"}
    # Ready all the same: answers rank lexically only (docs/answers.md, "Embeddings").
    return {"status": "ready", "details": {"semanticSearch": semantic.details()}}


@health.get("/metrics")
@hide
async def metrics() -> Response:
    return Response(generate_latest(), content_type=CONTENT_TYPE_LATEST)
