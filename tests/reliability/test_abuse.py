"""Abuse from the outside: injection in slugs, org slugs and q; huge limits, cursors and
queries; traversal. Each gets a clean 4xx in the contract's shape and harms nothing."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.fixtures.orgs import OrgClient

INJECTIONS = [
    "x' OR '1'='1",
    "'; DROP SCHEMA shared CASCADE; --",
    'x"; SELECT pg_sleep(5); --',
    "%' UNION SELECT id FROM shared.api_keys --",
    "t_01JD0000000000000000000000.categories",
]


async def assert_intact(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        count = await conn.execute(text("SELECT count(*) FROM shared.organizations"))
        assert count.scalar_one() > 0


async def test_injection_in_category_and_question_refs(org: OrgClient, engine: AsyncEngine) -> None:
    for payload in INJECTIONS:
        for resource, code in (
            ("categories", "category_not_found"),
            ("questions", "question_not_found"),
        ):
            r = await org.get(f"/{resource}/{quote(payload, safe='')}")
            assert r.status_code == 404, payload
            assert (await r.get_json())["error"]["code"] == code
    await assert_intact(engine)


async def test_injection_in_org_slug(org: OrgClient, client: Any, engine: AsyncEngine) -> None:
    auth = {"Authorization": f"Bearer {org.keys['admin']}"}
    for payload in INJECTIONS:
        r = await client.get(f"/api/v1/{quote(payload, safe='')}/categories", headers=auth)
        assert r.status_code == 404, payload
        assert (await r.get_json())["error"]["code"] == "org_not_found"
    await assert_intact(engine)


async def test_injection_in_search_and_filters(org: OrgClient, engine: AsyncEngine) -> None:
    await org.post("/categories", json={"name": "Visible"})
    for payload in [*INJECTIONS, "&|!:*()", "\\", "a:* | b"]:
        for path in ("/categories", "/questions"):
            r = await org.get(path, query={"q": payload})
            assert r.status_code == 200, (path, payload)
            # Operators are plain text to the search: nothing matches these words.
            assert (await r.get_json())["data"] == [], (path, payload)
        r = await org.get("/questions", query={"category": payload})
        assert r.status_code == 200
        assert (await r.get_json())["data"] == []
    await assert_intact(engine)


async def test_injection_in_manual_slugs(org: OrgClient) -> None:
    for payload in INJECTIONS:
        r = await org.post("/categories", json={"name": "n", "slug": payload}, scope="write")
        assert r.status_code == 400
        assert (await r.get_json())["error"]["code"] == "validation_failed"


async def test_huge_limit_cursor_and_query(org: OrgClient) -> None:
    cases = [
        {"limit": "9" * 50},
        {"limit": "1e9"},
        {"cursor": "A" * 100_000},
        {"q": "word " * 5_000},
    ]
    for path in ("/categories", "/questions"):
        for query in cases:
            r = await org.get(path, query=query)
            assert r.status_code == 400, (path, list(query))
            err = (await r.get_json())["error"]
            assert err["code"] == "validation_failed"
            assert err["details"][0]["field"] == next(iter(query))


async def test_huge_id_lists_and_strings(org: OrgClient) -> None:
    r = await org.post("/categories/reorder", json={"ids": ["x" * 10_000]}, scope="write")
    assert r.status_code == 400
    r = await org.post("/categories", json={"name": "n" * 100_000}, scope="write")
    assert r.status_code == 400
    assert (await r.get_json())["error"]["details"][0]["field"] == "name"


async def test_path_traversal_is_just_an_unknown_route(client: Any, org: OrgClient) -> None:
    for path in (
        "/api/v1/../../etc/passwd",
        "/docs/assets/../../../../etc/passwd",
        "/docs/assets/%2e%2e/%2e%2e/etc/passwd",
    ):
        r = await client.get(path, headers=org.headers())
        assert r.status_code == 404, path
        assert b"root:" not in await r.get_data()
