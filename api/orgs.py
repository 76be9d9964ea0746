"""Creating an org ready for the API: its schema and its default category, one transaction."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from api.categories.service import create_default_category
from billing.plans import Plan
from tenancy.orgs import OrgInfo, provision_org


async def create_org(engine: AsyncEngine, slug: str, name: str | None, plan: Plan) -> OrgInfo:
    return await provision_org(engine, slug, name, plan.value, seed=create_default_category)
