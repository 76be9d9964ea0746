"""``GET /api/v1/{org}/audit`` (admin): the org's audit log, newest first, cursor-paginated,
filtered by resource, resourceId, action, actor, since (inclusive) and until (exclusive)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.audit import OrgAuditEntry, api_key_actor, audit_change, system_actor
from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.api.audit.conftest import audit_page, relay, relayed_audit
from tests.api.keys.helpers import as_key, make_public_key
from tests.fixtures.orgs import OrgClient

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# (resource, resourceId, action, actor, minutes after T0)
SEED = [
    ("category", "cat_a", "created", "fpA", 0),
    ("question", "q_1", "created", "fpA", 10),
    ("question", "q_1", "updated", "fpB", 20),
    ("webhook", "wh_1", "created", "system", 30),
    ("key", "key_1", "created", "fpB", 40),
    ("settings", None, "updated", "system", 50),
    ("plan", None, "updated", "system", 60),
    ("question", "q_1", "translation_updated", "fpA", 70),
]


def at(minutes: int) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


async def seed(engine: AsyncEngine, org: OrgClient, entries: list[Any] | None = None) -> None:
    """Entries of several resources (``audit_change``, relayed), ``created_at`` set to T0 plus
    the minutes of each (the before/after hold the seed's index)."""
    entries = SEED if entries is None else entries
    async with tenant_session(engine, org.info.schema_name) as session:
        for i, (resource, resource_id, action, actor, _minutes) in enumerate(entries):
            await audit_change(
                session,
                org.info.id,
                resource=resource,
                resource_id=resource_id,
                action=action,
                actor=system_actor("scheduler") if actor == "system" else api_key_actor(actor),
                before=None,
                after={"seed": i},
            )
        await commit(session)
    await relay(engine, org)
    async with tenant_session(engine, org.info.schema_name) as session:
        for i, (*_rest, minutes) in enumerate(entries):
            await session.execute(
                update(OrgAuditEntry)
                .where(OrgAuditEntry.after["seed"].as_integer() == i)
                .values(created_at=T0 + timedelta(minutes=minutes))
            )
        await commit(session)


def seeds(entries: list[dict[str, Any]]) -> list[int]:
    return [e["after"]["seed"] for e in entries]


async def error_of(org: OrgClient, path: str = "/audit", **query: Any) -> dict[str, Any]:
    r = await org.get(path, query=query, scope="admin")
    assert r.status_code == 400, (query, await r.get_data())
    error: dict[str, Any] = (await r.get_json())["error"]
    assert error["code"] == "validation_failed"
    return error


def fields(error: dict[str, Any]) -> set[str]:
    return {d["field"] for d in error["details"]}


async def test_category_changes_over_http_are_listed_newest_first(
    engine: AsyncEngine, org: OrgClient
) -> None:
    r = await org.post("/categories", json={"name": "Billing"}, scope="write")
    assert r.status_code == 201
    category = (await r.get_json())["data"]
    r = await org.patch(f"/categories/{category['id']}", json={"name": "Payments"}, scope="write")
    assert r.status_code == 200
    assert (await org.delete(f"/categories/{category['id']}", scope="write")).status_code == 204

    entries = await relayed_audit(engine, org, resourceId=category["id"])
    assert [e["action"] for e in entries] == ["deleted", "updated", "created"]
    fingerprint = org.fingerprints["write"]
    for entry in entries:
        assert set(entry) == {
            "id",
            "resource",
            "resourceId",
            "action",
            "actor",
            "before",
            "after",
            "createdAt",
        }
        assert entry["resource"] == "category" and entry["resourceId"] == category["id"]
        assert entry["actor"] == {"type": "apiKey", "id": fingerprint}
        assert entry["id"].startswith("aud_")
        assert entry["createdAt"].endswith("Z")
        datetime.fromisoformat(entry["createdAt"])
    deleted, updated, created = entries
    assert created["before"] is None and created["after"]["name"] == "Billing"
    assert updated["before"]["name"] == "Billing" and updated["after"]["name"] == "Payments"
    assert deleted["after"] is None and deleted["before"]["name"] == "Payments"
    times = [e["createdAt"] for e in entries]
    assert times == sorted(times, reverse=True)


async def test_every_filter_alone(engine: AsyncEngine, org: OrgClient) -> None:
    await seed(engine, org)
    newest_first = list(reversed(range(len(SEED))))
    cases: list[tuple[dict[str, Any], list[int]]] = [
        ({}, newest_first),
        ({"resource": "question"}, [7, 2, 1]),
        ({"resource": "settings"}, [5]),
        ({"resource": "plan"}, [6]),
        ({"resourceId": "q_1"}, [7, 2, 1]),
        ({"resourceId": "nothing"}, []),
        ({"action": "created"}, [4, 3, 1, 0]),
        ({"action": "translation_updated"}, [7]),
        ({"actor": "fpA"}, [7, 1, 0]),
        ({"actor": "system"}, [6, 5, 3]),
        ({"actor": "scheduler"}, []),  # a system actor is filtered as "system"
        ({"since": at(40)}, [7, 6, 5, 4]),  # inclusive
        ({"until": at(20)}, [1, 0]),  # exclusive
        ({"since": at(20), "until": at(20)}, []),
        ({"since": "2026-03-01T13:10:00+01:00"}, [7, 6, 5, 4, 3, 2, 1]),  # an offset: 12:10Z
    ]
    for query, expected in cases:
        assert seeds((await audit_page(org, **query))["data"]) == expected, query


async def test_filters_combined(engine: AsyncEngine, org: OrgClient) -> None:
    await seed(engine, org)
    cases: list[tuple[dict[str, Any], list[int]]] = [
        ({"resource": "question", "action": "created"}, [1]),
        ({"resource": "question", "actor": "fpB"}, [2]),
        ({"resource": "question", "resourceId": "q_1", "since": at(15)}, [7, 2]),
        ({"actor": "system", "since": at(30), "until": at(60)}, [5, 3]),
        ({"actor": "fpA", "action": "created", "until": at(10)}, [0]),
        ({"resource": "key", "actor": "fpA"}, []),
        ({"resource": "question", "limit": 2}, [7, 2]),
    ]
    for query, expected in cases:
        assert seeds((await audit_page(org, **query))["data"]) == expected, query


async def test_pages_over_more_than_100_entries_repeat_and_skip_nothing(
    engine: AsyncEngine, org: OrgClient
) -> None:
    # 230 entries, in pairs sharing one created_at (ties are ordered by id).
    many = [("question", f"q_{i}", "updated", "fpA", i // 2) for i in range(230)]
    await seed(engine, org, many)
    seen: list[dict[str, Any]] = []
    query: dict[str, Any] = {"limit": 100, "resource": "question"}
    pages = 0
    while True:
        body = await audit_page(org, **query)
        pages += 1
        seen += body["data"]
        pagination = body["meta"]["pagination"]
        assert pagination["limit"] == 100
        if not pagination["hasMore"]:
            assert pagination["cursor"] is None
            break
        assert len(body["data"]) == 100
        query = {**query, "cursor": pagination["cursor"]}
    assert pages == 3
    assert len(seen) == 230 and len({e["id"] for e in seen}) == 230
    keys = [(e["createdAt"], e["id"]) for e in seen]
    assert keys == sorted(keys, reverse=True)
    # The default page is 50.
    body = await audit_page(org, resource="question")
    assert len(body["data"]) == 50 and body["meta"]["pagination"]["limit"] == 50
    assert body["data"] == seen[:50]


async def test_a_bad_limit_or_cursor_is_refused(engine: AsyncEngine, org: OrgClient) -> None:
    await seed(engine, org)
    assert fields(await error_of(org, limit=101)) == {"limit"}
    assert fields(await error_of(org, limit=0)) == {"limit"}
    cursor = (await audit_page(org, limit=1))["meta"]["pagination"]["cursor"]
    assert cursor
    forged = cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB")
    assert fields(await error_of(org, cursor=forged)) == {"cursor"}
    assert fields(await error_of(org, cursor="not-a-cursor")) == {"cursor"}
    # A cursor of another list (keys) is not one of this list.
    r = await org.get("/keys", query={"limit": 1}, scope="admin")
    assert r.status_code == 200
    keys_cursor = (await r.get_json())["meta"]["pagination"]["cursor"]
    assert keys_cursor
    assert fields(await error_of(org, cursor=keys_cursor)) == {"cursor"}


async def test_bad_filters_are_refused_naming_the_field(org: OrgClient) -> None:
    for query, field in [
        ({"resource": "invoice"}, "resource"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-03-01T12:00:00"}, "since"),  # no offset
        ({"until": "1772366400"}, "until"),  # Unix seconds
        ({"until": "2026-13-01T00:00:00Z"}, "until"),
        ({"since": at(10), "until": at(0)}, "since"),  # since after until
        ({"actor": "x" * 41}, "actor"),
        ({"resourceId": "x" * 65}, "resourceId"),
        ({"colour": "red"}, "colour"),
    ]:
        error = await error_of(org, **query)
        assert field in fields(error), (query, error)
    for path in ("/audit", "/audit/export"):
        error = await error_of(org, path, since=at(10), until=at(0))
        assert fields(error) == {"since"}


async def test_only_admin_keys_read_the_audit_log(engine: AsyncEngine, org: OrgClient) -> None:
    await seed(engine, org)
    public_key = (await make_public_key(org))["key"]
    for path in ("/audit", "/audit/export"):
        for scope in ("read", "write"):
            r = await org.get(path, scope=scope)
            assert r.status_code == 403, (path, scope)
            assert (await r.get_json())["error"]["code"] == "insufficient_scope"
        r = await as_key(org, public_key, "GET", path)
        assert r.status_code == 403, path
        assert (await org.get(path, scope=None)).status_code == 401
        assert (await org.get(path, scope="admin")).status_code == 200


async def test_another_org_sees_none_of_these_entries(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    r = await org.post("/categories", json={"name": "Secret plans"}, scope="write")
    category_id = (await r.get_json())["data"]["id"]
    await seed(engine, org)
    mine = await relayed_audit(engine, org)
    assert category_id in {e["resourceId"] for e in mine}
    theirs = await relayed_audit(engine, other_org)
    assert not {e["id"] for e in theirs} & {e["id"] for e in mine}
    assert await relayed_audit(engine, other_org, resourceId=category_id) == []
    assert await relayed_audit(engine, other_org, resourceId="q_1") == []
    r = await other_org.get("/audit/export", scope="admin")
    assert r.status_code == 200
    exported = (await r.get_data()).decode()
    assert category_id not in exported and '"q_1"' not in exported
    # Their key does not open this org's log.
    r = await org.client.get(f"/api/v1/{org.slug}/audit", headers=other_org.headers("admin"))
    assert r.status_code == 404


async def test_a_new_entry_is_listed_at_once_after_its_relay(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """The list is never served from the response cache: each read sees the entries relayed
    since the previous one."""
    before = await relayed_audit(engine, org)
    r = await org.post("/categories", json={"name": "Fresh"}, scope="write")
    category_id = (await r.get_json())["data"]["id"]
    after = await relayed_audit(engine, org)
    assert len(after) == len(before) + 1
    assert after[0]["resourceId"] == category_id and after[1:] == before


async def test_both_routes_are_documented_under_audit(client: Any) -> None:
    spec = await (await client.get("/openapi.json")).get_json()
    listing = spec["paths"]["/api/v1/{org}/audit"]["get"]
    export = spec["paths"]["/api/v1/{org}/audit/export"]["get"]
    assert listing["tags"] == ["audit"] and export["tags"] == ["audit"]
    assert listing["responses"]["200"]["content"]["application/json"]["schema"]
    names = {p["name"] for p in listing["parameters"]}
    assert {"resource", "resourceId", "action", "actor", "since", "until", "limit"} <= names
    assert {"resource", "action", "actor", "since", "until"} <= {
        p["name"] for p in export["parameters"]
    }
    assert "403" in listing["responses"] and "400" in export["responses"]
    assert "application/x-ndjson" in export["responses"]["200"]["content"]
    assert "audit" in [t["name"] for t in spec["tags"]]
    # Its entry model is its own: the category audit's keeps its shape (categoryId).
    schemas = spec["components"]["schemas"]
    assert "resourceId" in schemas["OrgAuditEntryOut"]["properties"]
    assert "categoryId" in schemas["AuditEntryOut"]["properties"]
