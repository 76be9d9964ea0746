"""``faq scheduler``: enqueues each periodic job when due. One active scheduler at a time:
it holds a Redis lock and renews it; another scheduler waits and takes over if it lapses."""

from __future__ import annotations

import signal
import threading
import time

import redis
import structlog

from tasks.jobs import JOBS
from tenancy.queue import enqueue
from tenancy.redis import sync_client
from tenancy.settings import get_settings

log = structlog.get_logger(__name__)
LOCK_NAME = "faq:scheduler:lock"
TICK_SECONDS = 1.0


def run_scheduler(stop: threading.Event | None = None) -> None:
    import tasks.actors  # noqa: F401  (registers the periodic jobs)

    stop = stop or threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    settings = get_settings()
    ttl = settings.faq_scheduler_lock_ttl_seconds
    client = sync_client(timeout=5.0)
    # The lock lapses `ttl` seconds after its holder stops renewing it (crash, SIGKILL).
    lock = client.lock(LOCK_NAME, timeout=ttl, thread_local=False)
    next_run: dict[str, float] = {}
    while not stop.is_set():
        try:
            if not lock.owned():
                if not lock.acquire(blocking=False):
                    stop.wait(TICK_SECONDS * 2)
                    continue
                log.info("scheduler_lock_acquired")
                next_run.clear()
            else:
                lock.extend(ttl, replace_ttl=True)
            now = time.monotonic()
            for job in JOBS.values():
                due = next_run.setdefault(job.name, now)
                if now >= due:
                    enqueue(job.actor_name, queue=job.queue)
                    next_run[job.name] = now + job.period_seconds()
                    log.info("job_enqueued", job=job.name)
        except redis.RedisError:
            log.warning("scheduler_redis_error", exc_info=True)
        stop.wait(TICK_SECONDS)
    if lock.owned():
        lock.release()
