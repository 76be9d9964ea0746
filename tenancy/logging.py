"""JSON logs through structlog; every line of a request carries its request id."""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog


def _dumps(value: Any, **kw: Any) -> str:
    """structlog's JSON serializer: orjson, keys in the order the processors put them, values
    it cannot encode through structlog's fallback (``repr``). Text, for ``PrintLogger``: the
    Dramatiq worker's ``sys.stdout`` is a pipe wrapper without ``.buffer``, so a
    ``BytesLogger`` could not be made there."""
    return orjson.dumps(value, default=kw.get("default"), option=orjson.OPT_NON_STR_KEYS).decode()


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(format="%(message)s", stream=sys.stdout, level=level.upper())
    for noisy in ("hypercorn.access", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=_dumps),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(),
        cache_logger_on_first_use=True,
    )
