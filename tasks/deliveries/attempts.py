"""One attempt as data: the ``Claim`` (a delivery leased for one attempt, and what to send)
and its ``Outcome`` (what came back), with the record each attempt appends to the delivery's
``attempts`` (``Outcome.record``; ``lost_attempt`` for an attempt whose worker stopped)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tenancy.clock import iso


@dataclass
class Claim:
    org_id: str
    delivery_id: str
    webhook_id: str
    event: str
    data: dict[str, Any]
    url: str
    secret_ciphertext: str
    token: str  # the lease token naming this attempt
    attempt_number: int


@dataclass
class Outcome:
    at: datetime
    status: int | None
    duration_ms: int
    error: str | None
    response_body: str | None
    retry_after: str | None
    body: dict[str, Any]  # the body as sent (signed at ``at``)

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def record(self) -> dict[str, Any]:
        return {
            "at": iso(self.at),
            "responseStatus": self.status,
            "durationMs": self.duration_ms,
            "error": self.error,
            "responseBody": self.response_body,
        }


def lost_attempt(started_at: datetime | None) -> dict[str, Any]:
    """The record of an attempt that left no result (its worker stopped during it)."""
    return {
        "at": iso(started_at),
        "responseStatus": None,
        "durationMs": None,
        "error": "no result recorded: the worker stopped during the attempt",
        "responseBody": None,
    }
