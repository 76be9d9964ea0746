"""Organizations: provisioning (row + schema + default category) and plan changes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from billing.plans import Plan
from tenancy.db import bind_org, shared_session, tenant_session
from tenancy.ids import new_id
from tenancy.keys import notify_tenancy_changed
from tenancy.models import Organization
from tenancy.schemas import provision_tenant_schema, version_tree

ORG_SLUG_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


class OrgExists(Exception):
    pass


class OrgNotFound(Exception):
    pass


@dataclass(frozen=True)
class OrgInfo:
    id: str
    slug: str
    name: str
    plan: Plan
    schema_name: str

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "slug": self.slug, "name": self.name, "plan": self.plan.value}


def _info(org: Organization) -> OrgInfo:
    return OrgInfo(org.id, org.slug, org.name, Plan(org.plan), org.schema_name)


async def create_org(engine: AsyncEngine, slug: str, name: str | None, plan: Plan) -> OrgInfo:
    """One transaction: the org row, its schema at the tenant head, its default category."""
    from api.categories.service import create_default_category

    if not ORG_SLUG_RE.fullmatch(slug):
        raise ValueError(f"org slug must match {ORG_SLUG_RE.pattern}")
    org_id = new_id("org")
    schema = "t_" + org_id.removeprefix("org_").lower()
    async with engine.begin() as conn:
        exists = await conn.execute(select(Organization.id).where(Organization.slug == slug))
        if exists.first() is not None:
            raise OrgExists(slug)
        await conn.execute(
            insert(Organization).values(
                id=org_id,
                slug=slug,
                name=name or slug,
                plan=plan.value,
                schema_name=schema,
                schema_revision=version_tree("tenant").head,
            )
        )
        await provision_tenant_schema(conn, schema)
        await create_default_category(AsyncSession(bind=await bind_org(conn, schema)))
    return OrgInfo(org_id, slug, name or slug, plan, schema)


async def get_org(engine: AsyncEngine, slug: str) -> OrgInfo:
    async with shared_session(engine) as session:
        org = (
            await session.execute(select(Organization).where(Organization.slug == slug))
        ).scalar_one_or_none()
    if org is None:
        raise OrgNotFound(slug)
    return _info(org)


async def set_plan(engine: AsyncEngine, slug: str, plan: Plan, *, actor: dict[str, str]) -> OrgInfo:
    """Change the plan (ops override or Stripe), audited in the org, visible to every process."""
    from tenancy.audit import record_audit

    org = await get_org(engine, slug)
    async with tenant_session(engine, org.schema_name) as session, session.begin():
        before = (
            await session.execute(
                select(Organization.plan).where(Organization.id == org.id).with_for_update()
            )
        ).scalar_one()
        if before != plan.value:
            await session.execute(
                update(Organization)
                .where(Organization.id == org.id)
                .values(plan=plan.value, updated_at=func.now())
            )
            await record_audit(
                session,
                resource_type="organization",
                resource_id=org.id,
                action="plan_changed",
                actor=actor,
                before={"plan": before},
                after={"plan": plan.value},
            )
            await notify_tenancy_changed(session, org.id)
    return OrgInfo(org.id, org.slug, org.name, plan, org.schema_name)
