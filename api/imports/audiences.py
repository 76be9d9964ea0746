"""Our own bundle's audiences, written through the audience commands (admin, the plan's cap,
audited). An audience is matched by slug, not by a remembered source: content names audiences
by slug, and a reader token carries slugs, so the slug is what must arrive unchanged."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences import service as audiences
from api.audiences.models import Audience
from api.audiences.schemas import AudienceCreate
from api.imports.items import AudienceItem
from tenancy.principal import Principal


async def write_audience(session: AsyncSession, org: Principal, item: AudienceItem) -> str:
    """Create the audience, or bring its name and description to the bundle's: the outcome."""
    body = AudienceCreate.model_validate(
        {"name": item.name, "slug": item.slug, "description": item.description}
    )
    current = (
        await session.execute(select(Audience).where(audiences.LIVE, Audience.slug == body.slug))
    ).scalar_one_or_none()
    if current is None:
        await audiences.create_audience(session, org, body)
        return "created"
    wanted = {"name": body.name, "description": body.description}
    changes = {k: v for k, v in wanted.items() if getattr(current, k) != v}
    if not changes:
        return "unchanged"
    await audiences.update_audience(session, org, current.id, changes)
    return "updated"
