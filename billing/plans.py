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
    webhooks: bool  # may create webhooks at all (FREE: 403 plan_required)
    webhook_limit: int  # live (not deleted) webhooks; past it, 402 plan_limit_reached
    locales: int | None = None  # enabled locales, the default included (issue 15); None: unlimited
    synonym_groups: int = 20  # synonym groups per locale (issue 28, ``PUT /synonyms``)
    audiences: int = 0  # live audiences (issue 39, ``POST /audiences``); past it, 402


CAPS: dict[Plan, Caps] = {
    Plan.FREE: Caps(categories=10, questions=200, webhooks=False, webhook_limit=0, locales=2),
    Plan.STARTER: Caps(
        categories=50,
        questions=2_000,
        webhooks=True,
        webhook_limit=10,
        locales=5,
        synonym_groups=200,
        audiences=2,
    ),
    Plan.PRO: Caps(
        categories=500,
        questions=50_000,
        webhooks=True,
        webhook_limit=50,
        locales=20,
        synonym_groups=1_000,
        audiences=20,
    ),
    # Locales: what the product can serve (issue 26): each page lists every enabled locale,
    # and a sitemap URL carries one alternate per locale.
    Plan.ENTERPRISE: Caps(
        categories=None,
        questions=None,
        webhooks=True,
        webhook_limit=500,
        locales=100,
        synonym_groups=5_000,
        audiences=200,
    ),
}


# Bytes of one import's upload (issue 29); past it, 413 payload_too_large.
IMPORT_UPLOAD_BYTES: dict[Plan, int] = {
    Plan.FREE: 10 * 2**20,
    Plan.STARTER: 25 * 2**20,
    Plan.PRO: 100 * 2**20,
    Plan.ENTERPRISE: 100 * 2**20,
}


def import_upload_bytes(plan: Plan) -> int:
    return IMPORT_UPLOAD_BYTES[plan]


# What an import's archive may inflate to, all members together (issue 42): this many times
# the plan's upload limit (text deflates 3 to 20 times; our own export bundles about 5).
INFLATE_RATIO = 8


def import_inflated_bytes(plan: Plan) -> int:
    return import_upload_bytes(plan) * INFLATE_RATIO


def caps_for(plan: Plan) -> Caps:
    return CAPS[plan]


def cap_of(plan: Plan, resource: str) -> int | None:
    """The cap on live ``resource`` ("categories", "questions", "webhooks", "locales",
    "audiences");
    None: unlimited."""
    caps = CAPS[plan]
    if resource == "webhooks":
        return caps.webhook_limit
    value: int | None = getattr(caps, resource)
    return value


def cap_allows(cap: int | None, current: int) -> bool:
    """True when one more can be created on top of ``current``."""
    return cap is None or current < cap


def allows_webhooks(plan: Plan) -> bool:
    return CAPS[plan].webhooks


# Team publishing (issue 30): active members per org (None: unlimited), and the plans that may
# turn on ``workflow.requireReview``.
SEATS: dict[Plan, int | None] = {
    Plan.FREE: 3,
    Plan.STARTER: 10,
    Plan.PRO: 50,
    Plan.ENTERPRISE: None,
}
REVIEW_PLANS = frozenset({Plan.PRO, Plan.ENTERPRISE})


def seats_of(plan: Plan) -> int | None:
    return SEATS[plan]


def allows_review(plan: Plan) -> bool:
    return plan in REVIEW_PLANS


# The Stripe price `lookup_key` of each paid plan (ops give their prices these keys).
LOOKUP_KEYS: dict[str, Plan] = {
    "starter": Plan.STARTER,
    "pro": Plan.PRO,
    "enterprise": Plan.ENTERPRISE,
}
RANK: dict[Plan, int] = {plan: rank for rank, plan in enumerate(Plan)}


def plan_for_lookup_key(lookup_key: str | None) -> Plan | None:
    return LOOKUP_KEYS.get(lookup_key) if lookup_key else None


def lookup_key_for(plan: Plan) -> str:
    return plan.value.lower()


def highest(plans: list[Plan]) -> Plan:
    """The best of ``plans``; FREE when there is none."""
    return max(plans, key=RANK.__getitem__, default=Plan.FREE)


# Requests per key per minute (`FAQ_RATE_LIMITS`, e.g. "FREE=300,PRO=6000", overrides).
# Generous: one key can fill its plan's question cap, and read it back, within one minute
# (STARTER: 2,000 creates), so the limit stops runaway clients, not ordinary ones.
REQUESTS_PER_MINUTE: dict[Plan, int] = {
    Plan.FREE: 1_200,
    Plan.STARTER: 6_000,
    Plan.PRO: 30_000,
    Plan.ENTERPRISE: 120_000,
}


def requests_per_minute(plan: Plan, overrides: str | None = None) -> int:
    for item in (overrides or "").split(","):
        name, _, value = item.partition("=")
        if name.strip().upper() == plan.value and value.strip().isdigit():
            return int(value)
    return REQUESTS_PER_MINUTE[plan]
