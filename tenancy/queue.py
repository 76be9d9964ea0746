"""Enqueue a Dramatiq actor by name, now or after the caller's transaction commits.

No service imports an actor module: a service names the actor (``"outbox.relay"``) and its
queue, and ``tasks/`` declares the actor under that name. The process's broker (Redis,
namespace ``faq``) is made on first use; a worker process adds its middleware and declares
its actors on the same broker when it starts (``tasks/broker.py``).
"""

from __future__ import annotations

import threading
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.settings import get_settings
from tenancy.transactions import after_commit

NAMESPACE = "faq"
_lock = threading.Lock()
_broker: RedisBroker | None = None


def get_broker() -> RedisBroker:
    """This process's broker (made on first use from ``REDIS_URL``, and made Dramatiq's global
    broker so every sender and actor of the process uses it)."""
    global _broker
    with _lock:
        if _broker is None:
            _broker = RedisBroker(  # type: ignore[no-untyped-call]
                url=get_settings().require_redis_url(),
                namespace=NAMESPACE,
                socket_connect_timeout=2,
            )
            dramatiq.set_broker(_broker)
        return _broker


def enqueue(
    actor_name: str, *args: Any, queue: str = "default", delay_ms: int | None = None
) -> None:
    """Send one message to ``actor_name`` on ``queue`` (blocking: Redis is called here)."""
    message: dramatiq.Message[Any] = dramatiq.Message(
        queue_name=queue, actor_name=actor_name, args=args, kwargs={}, options={}
    )
    get_broker().enqueue(message, delay=delay_ms)


def enqueue_after_commit(
    session: AsyncSession, key: str, actor_name: str, *args: Any, queue: str = "default"
) -> None:
    """Send the message once ``session``'s transaction has committed (never if it rolls
    back); ``key`` makes repeated calls in one transaction send once."""
    after_commit(session, key, lambda: enqueue(actor_name, *args, queue=queue))
