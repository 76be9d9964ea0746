"""Organizations: provisioning (row + schema + whatever the caller seeds) and plan changes.

The plan is stored as a name; ``billing/plans.py`` knows what each plan allows. ``api/orgs.py``
creates orgs ready for the API (it seeds the default category).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from tenancy.audit import Actor, audit_change, record_audit, system_actor
from tenancy.db import bind_org, shared_session, tenant_session
from tenancy.ids import new_id
from tenancy.keys import notify_tenancy_changed
from tenancy.models import Organization
from tenancy.schemas import provision_tenant_schema, version_tree
from tenancy.transactions import commit

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
    plan: str
    schema_name: str

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "slug": self.slug, "name": self.name, "plan": self.plan}


def _info(org: Organization) -> OrgInfo:
    return OrgInfo(org.id, org.slug, org.name, org.plan, org.schema_name)


Seed = Callable[[AsyncSession], Awaitable[None]]


async def provision_org(
    engine: AsyncEngine,
    slug: str,
    name: str | None,
    plan: str,
    *,
    seed: Seed,
    locale: str = "en",
) -> OrgInfo:
    """One transaction: the org row, its schema at the tenant head, and ``seed``'s rows
    (written through a session bound to the new schema). ``locale`` (a canonical BCP 47 tag,
    checked by the caller) is the org's default and only locale."""
    plan = str(plan)
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
                plan=plan,
                schema_name=schema,
                schema_revision=version_tree("tenant").head,
                default_locale=locale,
                locales=[locale],
            )
        )
        await provision_tenant_schema(conn, schema)
        await seed(AsyncSession(bind=await bind_org(conn, schema)))
    return OrgInfo(org_id, slug, name or slug, plan, schema)


async def get_org(engine: AsyncEngine, slug: str) -> OrgInfo:
    async with shared_session(engine) as session:
        org = (
            await session.execute(select(Organization).where(Organization.slug == slug))
        ).scalar_one_or_none()
    if org is None:
        raise OrgNotFound(slug)
    return _info(org)


PLAN_RESOURCE = "plan"  # in the org's audit log (resourceId: null, the org's own plan)


async def set_plan(
    engine: AsyncEngine,
    slug: str,
    plan: str,
    *,
    actor: dict[str, str],
    audit_actor: Actor | None = None,
) -> OrgInfo:
    """Change the plan (ops override or Stripe), audited in the org, visible to every process.

    A change is written twice in the org: in the category-era ``audit_log`` (resource type
    ``organization``, ``actor`` as given: ``{"type": "stripe", "id": <event id>}``, ``{"type":
    "ops", "id": "cli"}``) and in the org's audit log (resource ``plan``, action ``changed``,
    ``audit_actor``: ``system_actor("stripe")``, or ``system_actor("cli")`` by default)."""
    plan = str(plan)
    org = await get_org(engine, slug)
    async with tenant_session(engine, org.schema_name) as session:
        before = (
            await session.execute(
                # FOR NO KEY UPDATE, not FOR UPDATE: the outbox marker of the audit event
                # (another connection, before this commits) checks its foreign key to this
                # row with FOR KEY SHARE, which FOR UPDATE would block for ever.
                select(Organization.plan)
                .where(Organization.id == org.id)
                .with_for_update(key_share=True)
            )
        ).scalar_one()
        if before != plan:
            await session.execute(
                update(Organization)
                .where(Organization.id == org.id)
                .values(plan=plan, updated_at=func.now())
            )
            await record_audit(
                session,
                resource_type="organization",
                resource_id=org.id,
                action="plan_changed",
                actor=actor,
                before={"plan": before},
                after={"plan": plan},
            )
            await audit_change(
                session,
                org.id,
                resource=PLAN_RESOURCE,
                resource_id=None,
                action="changed",
                actor=audit_actor or system_actor("cli"),
                before={"plan": before},
                after={"plan": plan},
            )
            await notify_tenancy_changed(session, org.id)
        # Commits, then queues the org's outbox relay (the audit event's entry).
        await commit(session)
    return OrgInfo(org.id, org.slug, org.name, plan, org.schema_name)


# Schema names never change for an org id: remember them for the life of the process.
_schemas: dict[str, str] = {}


async def org_schema(engine: AsyncEngine, org_id: str) -> str | None:
    """The schema of org ``org_id`` (None when the org is gone), cached for the process."""
    schema = _schemas.get(org_id)
    if schema is None:
        async with shared_session(engine) as session:
            schema = (
                await session.execute(
                    select(Organization.schema_name).where(Organization.id == org_id)
                )
            ).scalar_one_or_none()
        if schema is not None:
            _schemas[org_id] = schema
    return schema
