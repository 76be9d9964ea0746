"""The log lines of a long job (an import, an embeddings backfill): one when it starts, one
now and then while it runs (at most every ``FAQ_PROGRESS_LOG_SECONDS``, 10 by default; never
one per item), one when it ends, each with the job's fields and the seconds it has run."""

from __future__ import annotations

import time
from typing import Any

from tenancy.settings import get_settings


class ProgressLog:
    def __init__(self, log: Any, name: str, **fields: Any) -> None:
        self.log = log
        self.name = name
        self.fields = fields
        self.started = self.last = time.monotonic()
        self.every = get_settings().faq_progress_log_seconds

    def _seconds(self, now: float) -> float:
        return round(now - self.started, 1)

    def start(self, **values: Any) -> None:
        self.started = self.last = time.monotonic()
        self.log.info(f"{self.name}_started", **self.fields, **values)

    def progress(self, **values: Any) -> None:
        """A progress line, unless the last one is younger than ``every`` seconds."""
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        self.log.info(f"{self.name}_progress", **self.fields, **values, seconds=self._seconds(now))

    def end(self, **values: Any) -> None:
        self.log.info(
            f"{self.name}_finished",
            **self.fields,
            **values,
            seconds=self._seconds(time.monotonic()),
        )
