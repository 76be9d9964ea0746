"""The Dramatiq broker: Redis, with asyncio actors. Configured once per process on import."""

from __future__ import annotations

from typing import Any

import dramatiq
import structlog
from dramatiq.asyncio import get_event_loop_thread
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware
from dramatiq.middleware.asyncio import AsyncIO

from tenancy.settings import get_settings


async def _close_loop_resources() -> None:
    from tasks.db import dispose_worker_engine
    from tasks.deliveries import close_loop_clients, wait_detached
    from tasks.events import close_redis

    await wait_detached(get_settings().faq_webhook_timeout_seconds + 5)
    await close_loop_clients()
    await close_redis()
    await dispose_worker_engine()


class WorkerLifecycle(Middleware):
    """In worker processes: logs at FAQ_LOG_LEVEL (JSON, like the API) on boot; on shutdown,
    the event loop's HTTP session, Redis clients and engine are closed while the loop still
    runs (this middleware sits before AsyncIO, whose shutdown stops the loop)."""

    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        from api.logging import configure_logging

        configure_logging(get_settings().faq_log_level)

    def after_worker_shutdown(self, broker: Any, worker: Any) -> None:
        thread = get_event_loop_thread()
        if thread is None or not thread.loop.is_running():
            return
        try:
            thread.run_coroutine(_close_loop_resources())
        except Exception:
            structlog.get_logger(__name__).warning("worker_close_failed", exc_info=True)


def _make_broker() -> RedisBroker:
    broker = RedisBroker(
        url=get_settings().require_redis_url(), namespace="faq", socket_connect_timeout=2
    )  # type: ignore[no-untyped-call]
    broker.add_middleware(AsyncIO())
    broker.add_middleware(WorkerLifecycle(), before=AsyncIO)
    return broker


broker = _make_broker()
dramatiq.set_broker(broker)
