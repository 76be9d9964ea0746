"""Per-org isolation of the sweeps: one org whose schema fails (a broken migration, a dropped
table) is logged and counted, and the sweep goes on with the other orgs.

``faq_job_org_failures_total{job}`` counts them in the worker's process (prometheus_client's
default registry; the worker exports no metrics endpoint today), and each job also returns the
count as ``failed`` in its summary, which ``faq jobs run`` prints and the scheduler logs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import structlog
from prometheus_client import Counter

log = structlog.get_logger(__name__)
R = TypeVar("R")

ORG_FAILURES = Counter(
    "faq_job_org_failures_total",
    "Orgs a periodic job could not process (the job went on with the other orgs)",
    ["job"],
)


def org_failed(job: str, org_id: str, error: BaseException) -> None:
    """Log one org's failure in ``job`` (with the error) and count it."""
    ORG_FAILURES.labels(job=job).inc()
    log.error("job_org_failed", job=job, org_id=org_id, error=type(error).__name__, exc_info=error)


async def each_org(
    job: str, org_ids: Iterable[str], work: Callable[[str], Awaitable[R]]
) -> tuple[list[R], int]:
    """``work(org_id)`` for each org in turn; an org that raises is logged and counted
    (``org_failed``) and the others still run. Returns the results and the failure count."""
    results: list[R] = []
    failed = 0
    for org_id in org_ids:
        try:
            results.append(await work(org_id))
        except Exception as error:  # one org's broken schema must not stop the others
            failed += 1
            org_failed(job, org_id, error)
    return results, failed
