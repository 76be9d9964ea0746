"""A delivery stores its event data once: the public ``payload`` (the exact body last sent) is
derived from the row's ``data`` and the time its body was signed, before and after `faq migrate`
moves existing rows to that shape."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Delivery
from api.webhooks.schemas import delivery_public
from tenancy.clock import iso, utcnow
from tenancy.db import tenant_session
from tenancy.ids import new_id
from tenancy.schemas import MIGRATIONS_DIR, upgrade_tenant_schema, version_tree_at
from tests.api.questions.helpers import create
from tests.api.webhooks.conftest import create_webhook, deliveries_of
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Endpoint

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]

PAYLOAD_MIGRATION = "0005_delivery_payload_once.py"


async def test_a_delivery_row_holds_its_data_once(
    org: OrgClient, endpoint: Endpoint, engine: AsyncEngine
) -> None:
    hook = await create_webhook(org, endpoint.url, events=["question.created"])
    # ~60 KB of incompressible text in the event data.
    blob = base64.b64encode(os.urandom(45_000)).decode()
    await create(org, title="Big", answer=blob)
    await endpoint.wait_for(1)
    deadline = time.monotonic() + 15
    while True:
        [delivery] = await deliveries_of(org, hook["id"])
        if delivery["status"] == "succeeded" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert delivery["status"] == "succeeded"
    # The public record still shows the exact body sent.
    assert delivery["payload"] == endpoint.requests[0].json
    async with tenant_session(engine, org.info.schema_name) as session:
        data_size, row_size = (
            await session.execute(
                text("SELECT pg_column_size(data), pg_column_size(d.*) FROM deliveries d")
            )
        ).one()
    assert data_size > 40_000
    assert row_size < data_size * 1.2, (row_size, data_size)


async def test_migrate_keeps_the_payload_of_existing_deliveries(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """A schema at the revision before, with deliveries written the old way (``data`` and
    ``payload``), migrated to head: each delivery's public record is unchanged."""
    old_tree_dir = tmp_path / "tenant"
    shutil.copytree(MIGRATIONS_DIR / "tenant", old_tree_dir)
    # The tree as it was before the payload migration: it and every later revision removed.
    for version in (old_tree_dir / "versions").glob("*.py"):
        if version.name >= PAYLOAD_MIGRATION:
            version.unlink()
    old_tree = version_tree_at(old_tree_dir)
    schema = "t_" + new_id("org").split("_", 1)[1].lower()
    async with engine.begin() as conn:
        await upgrade_tenant_schema(conn, schema, old_tree)
    now = utcnow()
    sent_at = now - timedelta(minutes=3, milliseconds=417)
    data = {"id": "cat_1", "name": "Old", "nested": {"list": [1, 2, 3]}}
    sent = {"id": "dlv_sent", "event": "category.created", "data": data, "timestamp": iso(sent_at)}
    queued = {
        "id": "dlv_queued",
        "event": "ping",
        "data": {"webhookId": "wh_1"},
        "timestamp": iso(now),
    }
    async with engine.begin() as conn:
        await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
        await conn.execute(
            text(
                "INSERT INTO webhooks (id, url, events, secret_ciphertext, created_at, updated_at)"
                " VALUES ('wh_1', 'https://example.com/h', '{category.created}', 'x', :n, :n)"
            ),
            {"n": now},
        )
        for body, status, created in (
            (sent, "succeeded", now - timedelta(minutes=5)),
            (queued, "pending", now),
        ):
            await conn.execute(
                text(
                    "INSERT INTO deliveries (id, webhook_id, event, data, status, payload,"
                    " next_attempt_at, created_at, updated_at) VALUES (:id, 'wh_1', :event,"
                    " CAST(:data AS jsonb), :status, CAST(:payload AS jsonb), :n, :c, :n)"
                ),
                {
                    "id": body["id"],
                    "event": body["event"],
                    "data": _json(body["data"]),
                    "status": status,
                    "payload": _json(body),
                    "n": now,
                    "c": created,
                },
            )
        # A row of the oldest shape: no payload kept yet.
        await conn.execute(
            text(
                "INSERT INTO deliveries (id, webhook_id, event, data, status, created_at,"
                " updated_at) VALUES ('dlv_bare', 'wh_1', 'ping', '{}', 'failed', :c, :c)"
            ),
            {"c": now - timedelta(minutes=9)},
        )
    try:
        async with engine.begin() as conn:
            applied = await upgrade_tenant_schema(conn, schema)
        assert PAYLOAD_MIGRATION.split("_")[0] in applied
        async with tenant_session(engine, schema) as session:
            rows = {d.id: d for d in (await session.execute(select(Delivery))).scalars()}
            columns = set(
                (
                    await session.execute(
                        text(
                            "SELECT column_name FROM information_schema.columns"
                            " WHERE table_schema = :s AND table_name = 'deliveries'"
                        ),
                        {"s": schema},
                    )
                ).scalars()
            )
        assert "payload" not in columns
        assert delivery_public(rows["dlv_sent"])["payload"] == sent
        assert delivery_public(rows["dlv_queued"])["payload"] == queued
        bare = delivery_public(rows["dlv_bare"])["payload"]
        assert bare == {
            "id": "dlv_bare",
            "event": "ping",
            "data": {},
            "timestamp": iso(rows["dlv_bare"].created_at),
        }
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


def _json(value: Any) -> str:
    import json

    return json.dumps(value)
