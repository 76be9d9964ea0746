"""Billing actors: apply one stored Stripe event; re-drive the ones no message applied."""

from __future__ import annotations

from datetime import timedelta

import dramatiq

from billing.stripe_events import apply_event, redrive_pending
from tasks import broker as broker  # configures the broker before the actors
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register

# Its own queue: Stripe events never wait behind a burst of webhook deliveries.
QUEUE = "billing"
REDRIVE_PERIOD_SECONDS = 60.0


@dramatiq.actor(actor_name="billing.apply_stripe_event", queue_name=QUEUE)
async def apply_stripe_event(event_id: str) -> None:
    """Apply the stored Stripe event ``event_id`` (idempotent: it applies once)."""
    await apply_event(worker_engine(), event_id)


async def redrive_stripe_events() -> int:
    return await redrive_pending(worker_engine(), older_than=timedelta(seconds=30))


@dramatiq.actor(actor_name="billing.redrive_stripe_events", queue_name=QUEUE)
async def redrive_stripe_events_actor() -> None:
    await redrive_stripe_events()


register(
    PeriodicJob(
        name="stripe-events-redrive",
        run=redrive_stripe_events,
        actor=redrive_stripe_events_actor,
        period_seconds=lambda: REDRIVE_PERIOD_SECONDS,
    )
)


def send_apply(event_id: str) -> None:
    """Enqueue the apply (call it after the event's commit: ``tenancy.transactions``)."""
    apply_stripe_event.send(event_id)
