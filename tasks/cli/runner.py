"""How a CLI command runs async work: in a fresh event loop whose per-loop resources
(``tenancy/loop_resources.py``: Redis client, worker engine) are closed before the loop ends.

``run_async(work)`` runs ``work()``; ``run_with_engine(work)`` also makes a database engine,
hands it to ``work`` and disposes of it. Imports stay inside the functions so ``faq --help``
loads no database code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")


def run_async(work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` to completion in a new event loop, then that loop's resources closed."""
    from tenancy.loop_resources import close_loop_resources

    async def main() -> T:
        try:
            return await work()
        finally:
            await close_loop_resources()

    return asyncio.run(main())


def run_with_engine(work: Callable[[AsyncEngine], Awaitable[T]]) -> T:
    """``work(engine)`` with an engine of its own (pool of 5), disposed when ``work`` ends.
    Its org transactions get the job statement timeout (``faq jobs run`` runs jobs)."""
    from tenancy.db import make_engine
    from tenancy.settings import get_settings

    async def with_engine() -> T:
        settings = get_settings()
        engine = make_engine(
            settings, pool_size=5, statement_timeout_ms=settings.faq_job_statement_timeout_ms
        )
        try:
            return await work(engine)
        finally:
            await engine.dispose()

    return run_async(with_engine)
