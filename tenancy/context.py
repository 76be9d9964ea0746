"""The org and key a unit of work acts for: what services receive instead of the request."""

from __future__ import annotations

from dataclasses import dataclass

from tenancy.audit import Actor, api_key_actor


@dataclass(frozen=True)
class OrgContext:
    id: str
    slug: str
    plan: str  # a plan name; ``billing.plans.Plan`` knows what it allows
    schema_name: str
    key_fingerprint: str
    scopes: tuple[str, ...]
    default_locale: str = "en"  # BCP 47, canonical case; one of ``locales``
    locales: tuple[str, ...] = ("en",)

    @property
    def actor(self) -> Actor:
        return api_key_actor(self.key_fingerprint)
