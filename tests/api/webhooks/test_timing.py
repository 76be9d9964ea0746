"""Retry timing: backoff with jitter and its cap, and Retry-After in both forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tasks.deliveries.policy import (
    RETRY_CAP_SECONDS,
    lease_seconds,
    retry_after_seconds,
    retry_delay,
)
from tenancy.settings import get_settings


@pytest.mark.parametrize(("n", "nominal"), [(1, 30), (2, 60), (3, 120)])
def test_retry_delay_doubles_with_jitter_of_at_most_20_percent(n: int, nominal: float):
    delays = [retry_delay(n, 30) for _ in range(2000)]
    assert min(delays) >= nominal * 0.8 and max(delays) <= nominal * 1.2
    assert max(delays) - min(delays) > nominal * 0.2  # it does vary


def test_retry_delay_is_capped_at_an_hour():
    assert all(retry_delay(3, 3000) <= RETRY_CAP_SECONDS for _ in range(200))


def test_retry_after_forms():
    now = datetime.now(UTC).replace(microsecond=0)
    assert retry_after_seconds("120", now) == 120
    assert retry_after_seconds(" 7 ", now) == 7
    assert retry_after_seconds("999999", now) == RETRY_CAP_SECONDS
    in_90 = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert retry_after_seconds(in_90, now) == pytest.approx(90, abs=1)
    past = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert retry_after_seconds(past, now) == 0
    far = format_datetime(now + timedelta(days=2), usegmt=True)
    assert retry_after_seconds(far, now) == RETRY_CAP_SECONDS
    for bad in (None, "", "soon", "-5", "1.5"):
        assert retry_after_seconds(bad, now) is None


def test_the_lease_outlasts_an_attempt():
    settings = get_settings()
    assert lease_seconds(settings) > settings.faq_webhook_timeout_seconds
