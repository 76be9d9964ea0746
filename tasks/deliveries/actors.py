"""The delivery actors (``tasks/registry.py``) and the ``deliveries-redrive`` periodic job.

The actor names are ``api/webhooks/dispatch.py``'s, where the senders take them from:
``deliveries.send`` (one delivery: retries, re-drive, a single new delivery),
``deliveries.send_many`` (up to SEND_BATCH deliveries of one webhook) and
``deliveries.redrive``. Both send actors take ids, are idempotent, and let a send that waits
on a slow receiver finish without their thread (``engine.run_detaching``).
"""

from __future__ import annotations

from typing import Any

from api.webhooks.dispatch import REDRIVE, SEND_MANY, SEND_ONE
from tasks.db import worker_engine
from tasks.deliveries.engine import deliver, deliver_many, run_detaching
from tasks.deliveries.redrive import redrive_overdue
from tasks.jobs import PeriodicJob, register
from tasks.registry import actor
from tenancy.settings import get_settings

_SEND_OPTIONS: dict[str, Any] = {
    "max_retries": 10,
    "min_backoff": 1_000,
    "max_backoff": 60_000,
    "time_limit": 15 * 60 * 1000,
}


@actor(SEND_ONE, **_SEND_OPTIONS)
async def send_delivery(org_id: str, delivery_id: str, webhook_id: str) -> None:
    await run_detaching(deliver(worker_engine(), org_id, delivery_id, webhook_id))


@actor(SEND_MANY, **_SEND_OPTIONS)
async def send_deliveries(
    org_id: str, webhook_id: str, delivery_ids: list[str], busy: int = 0
) -> None:
    """Deliveries of one webhook (the fan-out sends up to SEND_BATCH per message)."""
    await run_detaching(deliver_many(worker_engine(), org_id, webhook_id, delivery_ids, busy=busy))


@actor(REDRIVE, max_retries=0)
async def redrive_deliveries() -> None:
    await redrive_overdue()


register(
    PeriodicJob(
        name="deliveries-redrive",
        run=redrive_overdue,
        actor_name=REDRIVE,
        period_seconds=lambda: get_settings().faq_outbox_sweep_seconds,
    )
)
