"""Timing of deliveries: how many attempts, when the next one, how long an attempt's lease
lasts, how long a busy webhook's deliveries wait, and how long a message holds its thread.

- ``retry_delay``: backoff, base x 2^(n-1) with ±20% jitter, capped at an hour.
- ``retry_after_seconds``: a receiver's ``Retry-After`` (seconds or an HTTP date), capped.
- ``next_retry_seconds``: the wait before the next attempt after a failed one.
- ``lease_seconds``: how long an attempt may take before the re-drive may take it over.
- ``busy_delay``: the wait of deliveries that found their webhook's slots taken.
- ``shutdown_wait_seconds``: how long a stopping worker waits for detached sends.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from tenancy.settings import Settings

MAX_ATTEMPTS = 4  # the first attempt and 3 retries
RETRY_CAP_SECONDS = 3600.0
JITTER = 0.2
# A delivery due within this much is due now (clocks of workers and database differ a little).
DUE_TOLERANCE = timedelta(seconds=1)
# Busy waits at least this long move the rows (so the re-drive leaves them alone).
BUSY_RETRY_SECONDS = 1.0
BUSY_RETRY_CAP_SECONDS = 30.0
# A webhook busy in this process is usually a fast one with more deliveries queued than its
# in-flight limit: try again soon, then back off (doubling) while it stays busy.
BUSY_FIRST_RETRY_SECONDS = 0.1
# The wait for this process's first slot of a webhook before the deliveries go back.
LOCAL_WAIT_SECONDS = 0.1
# A message of many deliveries stops taking new waves after this long (the rest goes back to
# the queue), so a slow receiver holds a worker thread for about one timeout at most.
BATCH_HOLD_SECONDS = 2.0
# Behind a receiver answering each wave within QUICK_WAVE_SECONDS, a send goes on taking
# waves this much longer (detached from its message's thread by then): its inbox keeps
# filling while events flow, and handing it back to the queue costs a message per batch.
QUICK_HOLD_SECONDS = 20.0
# A wave answered within this long: the next wave is claimed while the wave is in flight.
QUICK_WAVE_SECONDS = 0.5
# Behind such a receiver, the transaction overlapped with a wave claims this many waves (and
# records the attempts of the waves since the last one): one transaction per that many waves.
WAVES_PER_CLAIM = 2
# A send still waiting on its receiver after this long finishes without its message's thread.
DETACH_AFTER_SECONDS = 1.0


def lease_seconds(settings: Settings) -> float:
    """How long an attempt may take before the re-drive may assume its worker is gone."""
    return settings.faq_webhook_timeout_seconds * 2 + 1


def retry_delay(retry_number: int, base: float) -> float:
    """Retry n waits about base x 2^(n-1), jitter at most ±20%, at most an hour."""
    delay: float = base * 2 ** (retry_number - 1) * random.uniform(1 - JITTER, 1 + JITTER)
    return min(delay, RETRY_CAP_SECONDS)


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """``Retry-After`` as seconds or an HTTP date, capped at an hour; None when absent/invalid."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), RETRY_CAP_SECONDS)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max((when - now).total_seconds(), 0.0), RETRY_CAP_SECONDS)


def next_retry_seconds(
    status: int | None,
    retry_after: str | None,
    attempt_number: int,
    now: datetime,
    settings: Settings,
) -> float:
    """After failed attempt ``attempt_number``: the receiver's ``Retry-After`` when it
    answered 429 or 503 with a valid one, else the backoff."""
    waited = retry_after_seconds(retry_after, now) if status in (429, 503) else None
    if waited is not None:
        return waited
    return retry_delay(attempt_number, settings.faq_webhook_retry_base_seconds)


def busy_delay(busy: int) -> float:
    """Waits grow while a webhook stays busy (a receiver that times out keeps its slots for
    FAQ_WEBHOOK_TIMEOUT_SECONDS): its waiting deliveries do not bounce through the queue and
    the database every second, which would cost the healthy receivers."""
    delay: float = min(BUSY_FIRST_RETRY_SECONDS * 2.0**busy, BUSY_RETRY_CAP_SECONDS)
    return delay * random.uniform(1, 1.5)


def shutdown_wait_seconds(settings: Settings) -> float:
    """A stopping worker lets detached sends finish (their attempts recorded) this long."""
    return settings.faq_webhook_timeout_seconds + 5
