"""The worker's engine: one per event loop (``tenancy/loop_resources.py``), made on first use
inside the process and loop that uses it (never at import time, never across a fork)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import make_engine
from tenancy.loop_resources import per_loop
from tenancy.settings import get_settings


async def _dispose(engine: AsyncEngine) -> None:
    await engine.dispose()


def _make() -> AsyncEngine:
    settings = get_settings()
    # Jobs sweep many rows per org: their own, longer statement timeout (not the request one).
    return make_engine(
        settings, pool_size=5, statement_timeout_ms=settings.faq_job_statement_timeout_ms
    )


def worker_engine() -> AsyncEngine:
    return per_loop("worker_engine", _make, _dispose)
