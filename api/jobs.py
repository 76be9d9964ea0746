"""An org's background jobs (imports, exports), the actor's side: the org's schema, the org as
the job's requester acted, and the claim of a queued job (a message delivered twice runs the
job once)."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.audit import Actor
from tenancy.clock import utcnow
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.principal import Principal
from tenancy.transactions import commit

QUEUED, RUNNING = "queued", "running"


async def schema_of(engine: AsyncEngine, org_id: str) -> str | None:
    async with shared_session(engine) as session:
        schema = (
            await session.execute(select(Organization.schema_name).where(Organization.id == org_id))
        ).scalar_one_or_none()
        await session.rollback()
    return schema


async def org_context(engine: AsyncEngine, org_id: str, actor: Actor) -> Principal:
    async with shared_session(engine) as session:
        org = (
            await session.execute(
                select(
                    Organization.id,
                    Organization.slug,
                    Organization.plan,
                    Organization.schema_name,
                    Organization.default_locale,
                    Organization.locales,
                ).where(Organization.id == org_id)
            )
        ).one()
        await session.rollback()
    return Principal(
        org.id,
        org.slug,
        org.plan,
        org.schema_name,
        actor.get("id", "") if actor.get("type") == "apiKey" else actor.get("keyFingerprint", ""),
        ("admin",),
        org.default_locale,
        tuple(org.locales),
    ).acting_as(actor)


J = TypeVar("J", bound=Any)


async def claim_queued(engine: AsyncEngine, schema: str, model: type[J], job_id: str) -> J | None:
    """The queued job ``job_id`` of ``model`` (``Import``, ``Export``), now ``running`` (its
    ``started_at`` set when it has one), committed; None when another run has it or had it."""
    async with tenant_session(engine, schema) as session:
        job: J | None = (
            await session.execute(
                select(model).where(model.id == job_id).with_for_update(skip_locked=True)
            )
        ).scalar_one_or_none()
        if job is None or job.status != QUEUED:
            return None
        job.status = RUNNING
        if hasattr(job, "started_at"):
            job.started_at = job.started_at or utcnow()
        await session.flush()
        await commit(session)
    return job
