"""Creating an org ready for the API: its schema and its default category, one transaction."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.categories.service import create_default_category
from api.locales import canonical_tag
from billing.plans import Plan
from tenancy.orgs import OrgInfo, provision_org


async def create_org(
    engine: AsyncEngine, slug: str, name: str | None, plan: Plan, locale: str = "en"
) -> OrgInfo:
    """``locale`` (any case; ValueError unless a BCP 47 tag known to CLDR) is the org's default
    and only locale, and the language of its default category."""
    tag = canonical_tag(locale)
    if tag is None:
        raise ValueError(f"locale {locale!r} is not a BCP 47 tag known to CLDR")

    async def seed(session: AsyncSession) -> None:
        await create_default_category(session, tag)

    return await provision_org(engine, slug, name, plan.value, seed=seed, locale=tag)
