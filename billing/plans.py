"""Plans and their caps (CONTRACT section 7). Every cap check and the webhook gate ask here."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Plan(StrEnum):
    FREE = "FREE"
    STARTER = "STARTER"
    PRO = "PRO"
    ENTERPRISE = "ENTERPRISE"


@dataclass(frozen=True)
class Caps:
    categories: int | None  # None: unlimited
    questions: int | None
    webhooks: bool


CAPS: dict[Plan, Caps] = {
    Plan.FREE: Caps(categories=10, questions=200, webhooks=False),
    Plan.STARTER: Caps(categories=50, questions=2_000, webhooks=True),
    Plan.PRO: Caps(categories=500, questions=50_000, webhooks=True),
    Plan.ENTERPRISE: Caps(categories=None, questions=None, webhooks=True),
}


def caps_for(plan: Plan) -> Caps:
    return CAPS[plan]


def cap_allows(cap: int | None, current: int) -> bool:
    """True when one more can be created on top of ``current``."""
    return cap is None or current < cap


def allows_webhooks(plan: Plan) -> bool:
    return CAPS[plan].webhooks
