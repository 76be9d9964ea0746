"""What ``faq worker`` hands Dramatiq: ``tasks.worker``'s broker, plus a middleware that, when
a worker process boots (after ``WorkerLifecycle`` has configured JSON logs), logs every line
of the process in its format (``tenancy/process_logging.py``: ``FAQ_LOG_FORMAT``)."""

from __future__ import annotations

from typing import Any

from dramatiq.middleware import Middleware

from tasks.worker import broker
from tenancy.process_logging import configure_process_logging
from tenancy.settings import get_settings


class ProcessLogging(Middleware):
    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        configure_process_logging(get_settings().faq_log_level, quiet_idle_jobs=True)


broker.add_middleware(ProcessLogging())

__all__ = ["broker"]
