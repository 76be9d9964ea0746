"""Re-encrypting every org's webhook secrets under the newest ``FAQ_SECRET_KEY`` (what
``faq secret-key rotate`` runs after a new key is put first in the list)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Webhook
from api.webhooks.signing import reencrypt_secret
from tenancy.db import shared_session, tenant_session
from tenancy.models import Organization
from tenancy.transactions import commit


def _ignore(_slug: str, _count: int) -> None:
    return None


async def reencrypt_webhook_secrets(
    engine: AsyncEngine, on_org: Callable[[str, int], None] = _ignore
) -> int:
    """Re-encrypt the webhook secrets of every org, oldest org first; returns how many.

    This function owns its transactions (the caller passes an engine, not a session): one
    per org, which locks the org's webhook rows, rewrites each ciphertext and commits before
    the next org starts. ``on_org(slug, count)`` is called after each org's commit. A failure
    leaves the orgs already done under the newest key; running it again is safe (each secret
    is re-encrypted under the newest key whatever key it was under).
    """
    async with shared_session(engine) as session:
        orgs = (
            await session.execute(
                select(Organization.slug, Organization.schema_name).order_by(
                    Organization.created_at
                )
            )
        ).all()
    total = 0
    for slug, schema in orgs:
        async with tenant_session(engine, schema) as session:
            rows = (
                await session.execute(
                    select(Webhook.id, Webhook.secret_ciphertext).with_for_update()
                )
            ).all()
            for webhook_id, ciphertext in rows:
                await session.execute(
                    update(Webhook)
                    .where(Webhook.id == webhook_id)
                    .values(secret_ciphertext=reencrypt_secret(ciphertext))
                )
            await commit(session)
        total += len(rows)
        on_org(slug, len(rows))
    return total
