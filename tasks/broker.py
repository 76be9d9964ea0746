"""The worker side of the broker: asyncio actors and a lifecycle, set up when a worker starts.

``tenancy.queue.get_broker`` makes the process's broker (senders need nothing more);
``configure_worker_broker`` adds what running actors needs and declares every actor
(``tasks/registry.py``). ``dramatiq tasks.worker`` calls it; nothing does on import.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware
from dramatiq.middleware.asyncio import AsyncIO

from tasks.registry import declare_actors
from tenancy.logging import configure_logging
from tenancy.loop_resources import close_loop_resources
from tenancy.priority import lower_thread_priority
from tenancy.queue import get_broker
from tenancy.settings import get_settings


class WorkerLifecycle(Middleware):
    """In worker processes: logs at FAQ_LOG_LEVEL (JSON, like the API) on boot; the event
    loop's thread work (``asyncio.to_thread``: the models embedding questions, the worker's
    CPU-heavy part) runs at a lower priority, so that it yields the CPU to the API's requests
    on a shared machine, as an import's converters do (its I/O and the actors' own code keep
    theirs); on shutdown,
    the event loop's resources (``tenancy/loop_resources.py``: HTTP sessions, Redis clients,
    the engine, sends still in flight) are closed while the loop still runs (this middleware
    sits before AsyncIO, whose shutdown stops the loop)."""

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        configure_logging(get_settings().faq_log_level)

    def after_worker_boot(self, broker: Any, worker: Any) -> None:
        thread = get_event_loop_thread()
        if thread is None:
            return
        executor = ThreadPoolExecutor(
            thread_name_prefix="worker-background", initializer=lower_thread_priority
        )
        thread.loop.call_soon_threadsafe(thread.loop.set_default_executor, executor)

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        thread = get_event_loop_thread()
        if thread is None or not thread.loop.is_running():
            return
        try:
            thread.run_coroutine(close_loop_resources())
        except Exception:
            structlog.get_logger(__name__).warning("worker_close_failed", exc_info=True)


def configure_worker_broker() -> RedisBroker:
    """The process's broker, ready to run actors: every actor module imported and declared."""
    import tasks.actors  # noqa: F401  (records every actor)

    broker = get_broker()
    if not any(isinstance(m, AsyncIO) for m in broker.middleware):
        broker.add_middleware(AsyncIO())
        broker.add_middleware(WorkerLifecycle(), before=AsyncIO)
    declare_actors(broker)
    return broker
