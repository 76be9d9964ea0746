"""The worker's engine: made lazily inside the process and event loop that uses it
(never at import time, never shared across forked processes)."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import make_engine
from tenancy.settings import get_settings

_engines: dict[int, AsyncEngine] = {}


def worker_engine() -> AsyncEngine:
    loop_id = id(asyncio.get_running_loop())
    engine = _engines.get(loop_id)
    if engine is None:
        engine = _engines[loop_id] = make_engine(get_settings(), pool_size=5)
    return engine


async def dispose_worker_engine() -> None:
    engine = _engines.pop(id(asyncio.get_running_loop()), None)
    if engine is not None:
        await engine.dispose()
