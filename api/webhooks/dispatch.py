"""The messages that make workers send deliveries, and the names of the actors they go to.

The delivery actors are declared in ``tasks/deliveries/actors.py`` under the names below; a
sender names the actor (``tenancy.queue``) and never imports it. The rows are the source of
truth: a lost message leaves its deliveries pending, and the re-drive job sends them again.

- ``enqueue_deliveries``: one ``deliveries.send_many`` message per webhook and SEND_BATCH
  deliveries (one ``deliveries.send`` for a single delivery).
- ``enqueue_deliveries_after_commit``: the same once the session's transaction commits; the
  deliveries of every call in that transaction go out together.
- ``enqueue_busy``: a webhook had no free slot: its deliveries again, later, in one message.
- ``retry_after_commit`` and ``resend_after_commit``: one ``deliveries.send`` per delivery
  after commit (a retry, delayed; the re-drive, at once).

``enqueue_deliveries`` and ``enqueue_busy`` call Redis and block: run them in a thread (the
after-commit ones run in a thread already, ``tenancy.transactions.commit``).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.queue import enqueue
from tenancy.transactions import after_commit

SEND_ONE = "deliveries.send"  # (org_id, delivery_id, webhook_id)
SEND_MANY = "deliveries.send_many"  # (org_id, webhook_id, delivery_ids, busy=0)
REDRIVE = "deliveries.redrive"  # the periodic re-drive
SEND_BATCH = 50  # deliveries per SEND_MANY message
_TO_SEND = "webhooks.deliveries_to_send"


def by_webhook(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Deliveries ``(delivery_id, webhook_id)`` as their ids per webhook, in order."""
    grouped: dict[str, list[str]] = {}
    for delivery_id, webhook_id in pairs:
        grouped.setdefault(webhook_id, []).append(delivery_id)
    return grouped


def enqueue_deliveries(org_id: str, pairs: list[tuple[str, str]]) -> None:
    """Send the messages for deliveries ``(delivery_id, webhook_id)`` of one org: one per
    webhook and SEND_BATCH deliveries (not one per delivery)."""
    for webhook_id, ids in by_webhook(pairs).items():
        for start in range(0, len(ids), SEND_BATCH):
            chunk = ids[start : start + SEND_BATCH]
            if len(chunk) == 1:
                enqueue(SEND_ONE, org_id, chunk[0], webhook_id)
            else:
                enqueue(SEND_MANY, org_id, webhook_id, chunk)


def enqueue_deliveries_after_commit(
    session: AsyncSession, org_id: str, pairs: list[tuple[str, str]]
) -> None:
    """``enqueue_deliveries`` once the session's transaction commits (never if it rolls
    back), for every delivery queued in that transaction."""
    queued: list[tuple[str, str, str]] = session.info.setdefault(_TO_SEND, [])
    queued.extend((org_id, delivery_id, webhook_id) for delivery_id, webhook_id in pairs)

    def send() -> None:
        batch: list[tuple[str, str, str]] = session.info.pop(_TO_SEND, [])
        by_org: dict[str, list[tuple[str, str]]] = {}
        for org, delivery_id, webhook_id in batch:
            by_org.setdefault(org, []).append((delivery_id, webhook_id))
        for org, org_pairs in by_org.items():
            enqueue_deliveries(org, org_pairs)

    after_commit(session, SEND_ONE, send)


def enqueue_busy(
    org_id: str, webhook_id: str, delivery_ids: list[str], busy: int, delay_seconds: float
) -> None:
    """Deliveries of a busy webhook, again in ``delay_seconds``; ``busy`` counts how many
    times in a row it was busy (the wait grows with it)."""
    enqueue(SEND_MANY, org_id, webhook_id, delivery_ids, busy, delay_ms=int(delay_seconds * 1000))


def retry_after_commit(
    session: AsyncSession, org_id: str, delivery_id: str, webhook_id: str, delay_seconds: float
) -> None:
    """The next attempt of a delivery, ``delay_seconds`` after the transaction commits."""

    def send() -> None:
        delay_ms = max(int(delay_seconds * 1000), 0)
        enqueue(SEND_ONE, org_id, delivery_id, webhook_id, delay_ms=delay_ms)

    # One key per delivery: a wave's record may schedule several retries in one transaction.
    after_commit(session, f"deliveries.retry:{delivery_id}", send)


def resend_after_commit(session: AsyncSession, org_id: str, pairs: list[tuple[str, str]]) -> None:
    """One ``deliveries.send`` per delivery ``(delivery_id, webhook_id)`` after commit."""

    def send() -> None:
        for delivery_id, webhook_id in pairs:
            enqueue(SEND_ONE, org_id, delivery_id, webhook_id)

    after_commit(session, "deliveries.redrive", send)
