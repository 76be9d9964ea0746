"""What ``faq worker`` hands Dramatiq: ``tasks.worker``'s broker, plus two middlewares of the
worker processes it forks:

- ``ProcessLogging``: when a worker process boots (after ``WorkerLifecycle`` has configured JSON
  logs), every line of the process is logged in its format (``tenancy/process_logging.py``:
  ``FAQ_LOG_FORMAT``).
- ``OneStopSignal`` (issue 42): a SIGTERM sent to the whole process group (``faq dev``, a
  terminal, a test) reaches a worker process twice, once directly and once forwarded by
  Dramatiq's main process. Dramatiq took the second as "kill": it raised ``SystemExit`` without
  stopping the worker, whose event-loop thread then kept the process alive until SIGKILL (30 to
  55 s, or forever). Here the repeat within ``REPEAT_SECONDS`` is the same stop; a later one
  ends the process at once (``os._exit``), as a second Ctrl-C would."""

from __future__ import annotations

import logging
import os
import signal
import time
from types import FrameType
from typing import Any

from dramatiq.middleware import Middleware

from tasks.worker import broker
from tenancy.process_logging import configure_process_logging
from tenancy.settings import get_settings

REPEAT_SECONDS = 2.0  # a SIGTERM this soon after the first is its copy, not a second request
KILLED = 1  # Dramatiq's exit status for a killed worker process


class ProcessLogging(Middleware):
    def before_worker_boot(self, broker: Any, worker: Any) -> None:
        configure_process_logging(get_settings().faq_log_level, quiet_idle_jobs=True)


class OneStopSignal(Middleware):
    def after_process_boot(self, broker: Any) -> None:
        stop = signal.getsignal(signal.SIGTERM)  # Dramatiq's: stop after in-flight messages
        first: list[float] = []

        def once(signum: int, frame: FrameType | None) -> None:
            now = time.monotonic()
            if not first:
                first.append(now)
                if callable(stop):
                    stop(signum, frame)
            elif now - first[0] > REPEAT_SECONDS:
                logging.getLogger("tasks.worker").warning("second SIGTERM: exiting now")
                os._exit(KILLED)

        signal.signal(signal.SIGTERM, once)


broker.add_middleware(ProcessLogging())
broker.add_middleware(OneStopSignal())

__all__ = ["broker"]
