"""Billing actors: apply one stored Stripe event; re-drive the ones no message applied."""

from __future__ import annotations

from datetime import timedelta

from billing.stripe_events import APPLY_ACTOR, QUEUE, apply_event, redrive_pending
from tasks.db import worker_engine
from tasks.jobs import PeriodicJob, register
from tasks.registry import actor

REDRIVE_ACTOR = "billing.redrive_stripe_events"
REDRIVE_PERIOD_SECONDS = 60.0


@actor(APPLY_ACTOR, queue=QUEUE)
async def apply_stripe_event(event_id: str) -> None:
    """Apply the stored Stripe event ``event_id`` (idempotent: it applies once)."""
    await apply_event(worker_engine(), event_id)


async def redrive_stripe_events() -> int:
    """Apply the stored Stripe events left unapplied for 30 s (what ``faq jobs run
    stripe-events-redrive`` runs and prints); returns how many."""
    return await redrive_pending(worker_engine(), older_than=timedelta(seconds=30))


@actor(REDRIVE_ACTOR, queue=QUEUE)
async def redrive_stripe_events_actor() -> None:
    # An actor returns nothing: Dramatiq warns of a discarded value on every run otherwise.
    await redrive_stripe_events()


register(
    PeriodicJob(
        name="stripe-events-redrive",
        run=redrive_stripe_events,
        actor_name=REDRIVE_ACTOR,
        queue=QUEUE,
        period_seconds=lambda: REDRIVE_PERIOD_SECONDS,
    )
)
