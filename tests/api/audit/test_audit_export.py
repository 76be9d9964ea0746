"""``GET /api/v1/{org}/audit/export`` (admin): the org's audit log as NDJSON, oldest first,
streamed in keyset batches; since (inclusive) / until (exclusive), resource, action, actor."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from api.audit.service import EXPORT_BATCH
from tests.api.audit.conftest import audit_page, relay
from tests.api.audit.test_audit_api import SEED, at, seed, seeds
from tests.fixtures.orgs import OrgClient

NDJSON = "application/x-ndjson"


async def export(org: OrgClient, **query: Any) -> list[dict[str, Any]]:
    r = await org.get("/audit/export", query=query, scope="admin")
    assert r.status_code == 200, await r.get_data()
    assert r.headers["Content-Type"] == NDJSON
    assert "Cache-Control" not in r.headers or "no-store" in r.headers["Cache-Control"]
    body = (await r.get_data()).decode()
    if not body:
        return []
    assert body.endswith("\n")
    return [json.loads(line) for line in body[:-1].split("\n")]


async def test_the_export_streams_every_entry_of_the_window_oldest_first(
    engine: AsyncEngine, org: OrgClient
) -> None:
    await seed(engine, org)
    everything = await export(org)
    assert seeds(everything) == list(range(len(SEED)))
    # The list's entries, in the opposite order, same shape.
    listed = (await audit_page(org))["data"]
    assert everything == list(reversed(listed))
    assert seeds(await export(org, since=at(20), until=at(60))) == [2, 3, 4, 5]
    assert seeds(await export(org, since=at(60))) == [6, 7]
    assert seeds(await export(org, until=at(0))) == []
    assert seeds(await export(org, resource="question")) == [1, 2, 7]
    assert seeds(await export(org, action="updated", actor="system")) == [5, 6]
    assert seeds(await export(org, actor="fpB", since=at(30))) == [4]


async def test_an_empty_window_is_an_empty_body(engine: AsyncEngine, org: OrgClient) -> None:
    await seed(engine, org)
    r = await org.get("/audit/export", query={"since": at(-60), "until": at(-1)}, scope="admin")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == NDJSON
    assert await r.get_data() == b""


async def test_an_export_larger_than_its_batches_is_whole_and_in_order(
    engine: AsyncEngine, org: OrgClient
) -> None:
    # Two and a half batches, three entries per created_at (ties across batch edges).
    n = EXPORT_BATCH * 2 + EXPORT_BATCH // 2
    await seed(engine, org, [("question", f"q_{i}", "updated", "fpA", i // 3) for i in range(n)])
    lines = await export(org, resource="question")
    assert len(lines) == n and len({e["id"] for e in lines}) == n
    keys = [(e["createdAt"], e["id"]) for e in lines]
    assert keys == sorted(keys)
    assert sorted(seeds(lines)) == list(range(n))


async def test_the_export_is_never_a_cached_copy(engine: AsyncEngine, org: OrgClient) -> None:
    first = await export(org)
    r = await org.post("/categories", json={"name": "Later"}, scope="write")
    category_id = (await r.get_json())["data"]["id"]
    await relay(engine, org)
    second = await export(org)
    assert len(second) == len(first) + 1
    assert second[-1]["resourceId"] == category_id and second[:-1] == first


async def test_bad_export_filters_are_refused_naming_the_field(org: OrgClient) -> None:
    for query, field in [
        ({"since": "last week"}, "since"),
        ({"until": "2026-03-01"}, "until"),
        ({"resource": "invoice"}, "resource"),
        ({"limit": "10"}, "limit"),  # the export has no pages
    ]:
        r = await org.get("/audit/export", query=query, scope="admin")
        assert r.status_code == 400, query
        error = (await r.get_json())["error"]
        assert error["code"] == "validation_failed"
        assert field in {d["field"] for d in error["details"]}, (query, error)
