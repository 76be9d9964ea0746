"""One format for every line a process logs: structlog's events and the standard library's
records (Hypercorn's "Running on", Dramatiq's worker lines, Alembic) go through the same
renderer.

JSON (one object a line, ``tenancy.logging``'s serializer) is the default, for production.
``FAQ_LOG_FORMAT=console`` (``faq dev`` sets it for every process it runs) renders structlog's
``ConsoleRenderer`` instead: for a person at a terminal, in colour when it is one (``NO_COLOR``
turns colour off). With ``quiet_idle_jobs`` (the worker and the scheduler under ``faq dev``) the
console leaves out what periodic jobs log when there was nothing to do. The console's request
line reads ``GET /path 404 2.1 ms route_not_found request_id=3f2a9c1b`` (``readable_requests``:
the id shortened, at the end; the JSON line keeps every field and the whole id).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from structlog.typing import Processor

from tenancy.logging import _dumps

FORMAT_VARIABLE = "FAQ_LOG_FORMAT"
HANDLER_NAME = "faq-process-logging"
FORMATS = ("json", "console")
# Standard-library loggers whose INFO lines say nothing a reader needs.
QUIET_LOGGERS = ("hypercorn.access", "asyncio", "alembic.runtime.plugins")
# Keys every event has; the others are its fields.
_META = {"event", "level", "timestamp", "logger", "request_id", "_record", "_from_structlog"}


def log_format() -> str:
    """``FAQ_LOG_FORMAT``: ``json`` (also when unset) or ``console``; ValueError otherwise."""
    value = os.environ.get(FORMAT_VARIABLE, "").strip().lower() or "json"
    if value not in FORMATS:
        raise ValueError(f"{FORMAT_VARIABLE} must be json or console, not {value!r}")
    return value


def drop_idle_jobs(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Leave out the scheduler's ``job_enqueued`` and a job's summary that counts nothing but
    the orgs it looked at (every other field an integer, all zero): an idle periodic job."""
    if event_dict.get("event") == "job_enqueued":
        raise structlog.DropEvent
    fields = {k: v for k, v in event_dict.items() if k not in _META and k != "orgs"}
    counts = [v for v in fields.values() if isinstance(v, int) and not isinstance(v, bool)]
    if counts and len(counts) == len(fields) and not any(counts):
        raise structlog.DropEvent
    return event_dict


SHORT_ID = 8  # characters of a request id the console shows (the JSON lines keep it whole)


def _duration(ms: Any) -> str:
    if not isinstance(ms, int | float):
        return str(ms)
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"


def readable_requests(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """The console's request line (issue 41): ``GET /api/v1/demo/questions 404 2.1 ms
    question_not_found``, the path asked (else the route), and the error code of a 4xx/5xx;
    on every line the request id shortened, at the end."""
    if event_dict.get("event") == "request" and "status" in event_dict:
        method = event_dict.pop("method", "")
        route = event_dict.pop("route", "")
        path = event_dict.pop("path", None) or route
        status = event_dict.pop("status")
        parts = [str(method), str(path), str(status)]
        if "duration_ms" in event_dict:
            parts.append(_duration(event_dict.pop("duration_ms")))
        error = event_dict.pop("error", None)
        if error:
            parts.append(str(error))
        event_dict["event"] = " ".join(parts)
    request_id = event_dict.pop("request_id", None)
    if request_id:
        event_dict["request_id"] = str(request_id)[:SHORT_ID]
    return event_dict


def _renderer(fmt: str, stream: TextIO) -> Processor:
    if fmt == "json":
        return structlog.processors.JSONRenderer(serializer=_dumps)
    colors = stream.isatty() and not os.environ.get("NO_COLOR")
    return structlog.dev.ConsoleRenderer(
        colors=colors,
        exception_formatter=structlog.dev.plain_traceback,
        sort_keys=False,  # in the order logged; the request id last (``readable_requests``)
    )


def configure_process_logging(
    level: str = "INFO",
    *,
    fmt: str | None = None,
    quiet_idle_jobs: bool = False,
    stream: TextIO | None = None,
) -> None:
    """Route structlog and the standard library's logging to ``stream`` (stdout unless said:
    a command whose stdout is its result logs to stderr) in one format (``fmt``, else
    ``FAQ_LOG_FORMAT``), at ``level``. Safe to call again (it replaces, never adds)."""
    stream = stream or sys.stdout
    fmt = fmt or log_format()
    numeric = logging.getLevelNamesMapping()[level.upper()]
    timestamper = structlog.processors.TimeStamper(
        fmt="iso" if fmt == "json" else "%Y-%m-%d %H:%M:%S", utc=fmt == "json"
    )
    shared: list[Processor] = [structlog.processors.add_log_level, timestamper]
    if fmt == "console" and quiet_idle_jobs:
        shared.append(drop_idle_jobs)
    if fmt == "console":
        shared.append(readable_requests)
    exceptions: list[Processor] = [structlog.processors.format_exc_info] if fmt == "json" else []
    renderer = _renderer(fmt, stream)

    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared, *exceptions],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    handler.set_name(HANDLER_NAME)
    root = logging.getLogger()
    ours = [h for h in root.handlers if h.get_name() == HANDLER_NAME]
    # As logging.basicConfig: a host that already handles the standard library's records
    # (pytest) keeps them; this function's own earlier handler is replaced.
    if len(ours) == len(root.handlers):
        for old in ours:
            root.removeHandler(old)
        root.addHandler(handler)
        root.setLevel(numeric)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))

    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, *shared, *exceptions, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(stream),
        # A logger used before a later call (a worker process reconfigures at boot) must
        # take the new format: cache only where the format never changes (JSON).
        cache_logger_on_first_use=fmt == "json",
    )
