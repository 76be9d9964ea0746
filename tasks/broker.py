"""The Dramatiq broker: Redis, with asyncio actors. Configured once per process on import."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware.asyncio import AsyncIO

from tenancy.settings import get_settings


def _make_broker() -> RedisBroker:
    broker = RedisBroker(
        url=get_settings().require_redis_url(), namespace="faq", socket_connect_timeout=2
    )  # type: ignore[no-untyped-call]
    broker.add_middleware(AsyncIO())
    return broker


broker = _make_broker()
dramatiq.set_broker(broker)
