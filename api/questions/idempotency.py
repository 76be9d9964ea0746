"""Idempotent creates: a create with a key claims it first (``claim_key``) and stores its
response under it (``store_response``), so a retry with the same key and body within
``IDEMPOTENCY_TTL`` replays that response; expired keys are removed by the purge
(``delete_expired_keys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.errors import IdempotencyKeyReused, ServiceUnavailable, field_error
from api.questions.models import IdempotencyKey
from api.questions.schemas import PUBLIC_FIELDS
from tenancy.clock import utcnow

IDEMPOTENCY_TTL = timedelta(hours=24)


@dataclass(frozen=True)
class Created:
    """A create's response: fresh, or the stored first response of its idempotency key."""

    status: int
    body: dict[str, Any]
    replayed: bool = False


async def claim_key(session: AsyncSession, key: str, request_hash: str) -> Created | None:
    """Own ``key`` for this request (None), or the stored response to replay.

    The INSERT waits on the unique index while a concurrent request with the same key is in
    flight, then sees its committed row (or none, if it failed and rolled back)."""
    table = IdempotencyKey.__table__
    for _ in range(5):
        now = utcnow()
        claimed = (
            await session.execute(
                pg_insert(IdempotencyKey)
                .values(key=key, request_hash=request_hash, created_at=now)
                .on_conflict_do_nothing(index_elements=[IdempotencyKey.key])
                .returning(IdempotencyKey.key)
            )
        ).first()
        if claimed is not None:
            return None
        row = (await session.execute(select(table).where(table.c.key == key))).first()
        if row is None:
            continue  # purged between the two statements
        if row.created_at < now - IDEMPOTENCY_TTL:
            # Expired keys count as absent: take the row over (only one taker wins).
            taken = (
                await session.execute(
                    update(IdempotencyKey)
                    .where(
                        IdempotencyKey.key == key,
                        IdempotencyKey.created_at < now - IDEMPOTENCY_TTL,
                    )
                    .values(
                        request_hash=request_hash,
                        created_at=now,
                        response_status=None,
                        response_body=None,
                    )
                    .returning(IdempotencyKey.key)
                )
            ).first()
            if taken is not None:
                return None
            continue
        if row.request_hash != request_hash:
            raise IdempotencyKeyReused(
                details=field_error("X-Idempotency-Key", "used with a different body")
            )
        if row.response_status is not None and row.response_body is not None:
            return Created(row.response_status, _as_sent(row.response_body), replayed=True)
    raise ServiceUnavailable("The idempotency key is busy; retry.")


def _as_sent(stored: dict[str, Any]) -> dict[str, Any]:
    """JSONB reorders object keys: put them back in the order of the first response, so the
    replay is the same bytes, not only the same JSON."""
    data = stored["data"]
    return {"data": {name: data[name] for name in PUBLIC_FIELDS if name in data}}


async def store_response(session: AsyncSession, key: str, created: Created) -> None:
    await session.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.key == key)
        .values(response_status=created.status, response_body=created.body)
    )


async def delete_expired_keys(session: AsyncSession) -> int:
    """Remove the keys older than ``IDEMPOTENCY_TTL``; returns how many."""
    keys = (
        await session.execute(
            delete(IdempotencyKey)
            .where(IdempotencyKey.created_at < utcnow() - IDEMPOTENCY_TTL)
            .returning(IdempotencyKey.key)
        )
    ).all()
    return len(keys)
