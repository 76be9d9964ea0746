"""The audit export's batches are bounded by bytes, not only by entries (issue 26): an entry of
the org's audit log can hold two 100,000-character answers, so 500 of them are 400 MB.

``seed_large_entries`` (SQL: the entries a question's answer PATCHes make, without relaying
hundreds of them) is shared with ``tests/reliability/test_memory_files.py``.
"""

from __future__ import annotations

import json

from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.audit import service
from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.api.translations.test_xliff_bounds import EMOJI, body_chunks
from tests.fixtures.orgs import OrgClient

_ENTRIES = """
INSERT INTO audit_entries (id, resource, resource_id, action, actor, actor_key, before, after,
                           created_at)
SELECT :prefix || lpad(i::text, 6, '0'), 'question', 'q_big', 'updated',
       jsonb_build_object('type', 'apiKey', 'id', 'fpbig'), 'fpbig',
       jsonb_build_object('answer', repeat(CAST(:unit AS text), :repeat)),
       jsonb_build_object('answer', repeat(CAST(:unit AS text), :repeat) || i),
       now() - CAST(:hours_ago AS int) * interval '1 hour' + i * interval '1 millisecond'
FROM generate_series(CAST(:first AS int), CAST(:last AS int)) AS i
"""


async def seed_large_entries(
    engine: AsyncEngine,
    schema: str,
    *,
    count: int,
    prefix: str = "aud_big",
    unit: str = EMOJI,
    repeat: int = 100_000,
    hours_ago: int = 1,
) -> None:
    """``count`` entries of a question's answer changed, ``before`` and ``after`` each an
    answer of ``unit`` x ``repeat`` (the largest a question holds: 100,000 characters),
    written ``hours_ago`` hours ago a millisecond apart."""
    for first in range(1, count + 1, 50):  # statements well within the statement timeout
        async with tenant_session(engine, schema) as session:
            await session.execute(
                text(_ENTRIES),
                {
                    "prefix": prefix,
                    "first": first,
                    "last": min(first + 49, count),
                    "unit": unit,
                    "repeat": repeat,
                    "hours_ago": hours_ago,
                },
            )
            await commit(session)


async def test_the_export_of_large_entries_streams_in_byte_bounded_batches(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    count = 12  # 800 kB each: about 10 MB, under one batch of 500 entries by count
    await seed_large_entries(engine, org.info.schema_name, count=count)
    status, headers, chunks = await body_chunks(
        app, f"/api/v1/{org.slug}/audit/export", org.headers("admin"), {"resource": "question"}
    )
    assert status == 200
    assert headers["Content-Type"] == "application/x-ndjson"
    body = b"".join(chunks)
    assert len(body) > 4 * service.EXPORT_BATCH_BYTES
    lines = [json.loads(line) for line in body.decode().splitlines()]
    assert [e["id"] for e in lines] == [f"aud_big{i:06d}" for i in range(1, count + 1)]
    assert all(e["before"]["answer"] == EMOJI * 100_000 for e in lines)
    assert [e["after"]["answer"] for e in lines] == [EMOJI * 100_000 + str(i) for i in range(1, 13)]
    # Every piece sent is one batch: within the byte budget, or a single entry larger than it.
    for chunk in chunks:
        assert chunk.endswith(b"\n")
        assert len(chunk) <= service.EXPORT_BATCH_BYTES or chunk.count(b"\n") == 1, len(chunk)
    assert len(chunks) >= len(body) // service.EXPORT_BATCH_BYTES


async def test_small_entries_still_come_many_to_a_batch(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    """A byte budget does not make an export of ordinary entries a query per entry."""
    await seed_large_entries(engine, org.info.schema_name, count=300, unit="x", repeat=10)
    await seed_large_entries(engine, org.info.schema_name, count=3, prefix="aud_z", hours_ago=0)
    status, _headers, chunks = await body_chunks(
        app, f"/api/v1/{org.slug}/audit/export", org.headers("admin"), {"resource": "question"}
    )
    assert status == 200
    sizes = [chunk.count(b"\n") for chunk in chunks]
    assert sum(sizes) == 303
    # The small ones: a first plan of EXPORT_FIRST_PLAN, then the rest in one batch.
    assert sizes[0] == service.EXPORT_FIRST_PLAN and len(sizes) <= 3, sizes
    assert max(len(chunk) for chunk in chunks) <= service.EXPORT_BATCH_BYTES
