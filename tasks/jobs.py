"""Periodic jobs: what ``faq scheduler`` enqueues and ``faq jobs run NAME`` runs in-process.

Each job is a plain async function (run in-process by ``faq jobs run``) and the name of the
actor (``tasks/registry.py``) that runs the same function in a worker, enqueued by the
scheduler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    run: Callable[[], Awaitable[Any]]
    actor_name: str
    period_seconds: Callable[[], float]
    queue: str = "default"


JOBS: dict[str, PeriodicJob] = {}


def register(job: PeriodicJob) -> None:
    JOBS[job.name] = job
