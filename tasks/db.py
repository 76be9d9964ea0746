"""The worker's engine: one per event loop (``tenancy/loop_resources.py``), made on first use
inside the process and loop that uses it (never at import time, never across a fork)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import make_engine
from tenancy.loop_resources import per_loop
from tenancy.settings import get_settings


async def _dispose(engine: AsyncEngine) -> None:
    await engine.dispose()


def worker_engine() -> AsyncEngine:
    return per_loop("worker_engine", lambda: make_engine(get_settings(), pool_size=5), _dispose)
