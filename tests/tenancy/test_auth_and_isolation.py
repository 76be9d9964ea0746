"""Authentication, scopes and tenant isolation on every category endpoint (CONTRACT 2, 3)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from api.categories.models import Category
from tenancy.db import shared_session, tenant_session
from tenancy.keys import revoke_key
from tests.fixtures.orgs import OrgClient

FAKE_ID = "cat_01JD0000000000000000000000"


async def a_category(org: OrgClient) -> dict:
    r = await org.post("/categories", json={"name": "Private"}, scope="write")
    return (await r.get_json())["data"]


def category_endpoints(cat_id: str, other_id: str) -> list[tuple[str, str, dict | None]]:
    return [
        ("GET", f"/categories/{cat_id}", None),
        ("PATCH", f"/categories/{cat_id}", {"name": "stolen"}),
        ("DELETE", f"/categories/{cat_id}", None),
        ("POST", "/categories/merge", {"sourceId": cat_id, "targetId": other_id}),
        ("POST", "/categories/merge", {"sourceId": other_id, "targetId": cat_id}),
    ]


async def test_no_or_bad_authorization_is_401(org: OrgClient) -> None:
    for headers in (
        {},
        {"Authorization": "Basic abc"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer faq_unknown"},
    ):
        r = await org.client.get(f"/api/v1/{org.slug}/categories", headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["WWW-Authenticate"] == "Bearer"
        assert (await r.get_json())["error"]["code"] == "unauthorized"


async def test_401_comes_before_org_lookup(org: OrgClient) -> None:
    r = await org.client.get("/api/v1/no-such-org/categories")
    assert r.status_code == 401


async def test_key_of_another_org_and_unknown_org_are_indistinguishable(
    org: OrgClient, other_org: OrgClient
) -> None:
    auth = {"Authorization": f"Bearer {org.keys['admin']}"}
    foreign = await org.client.get(f"/api/v1/{other_org.slug}/categories", headers=auth)
    missing = await org.client.get("/api/v1/no-such-org/categories", headers=auth)
    assert foreign.status_code == missing.status_code == 404
    assert await foreign.get_json() == await missing.get_json()
    assert (await foreign.get_json())["error"]["code"] == "org_not_found"


async def test_scopes_are_ordered(org: OrgClient) -> None:
    cat = await a_category(org)
    assert (await org.get("/categories", scope="read")).status_code == 200
    r = await org.post("/categories", json={"name": "x"}, scope="read")
    assert r.status_code == 403
    assert (await r.get_json())["error"]["code"] == "insufficient_scope"
    assert (
        await org.patch(f"/categories/{cat['id']}", json={"order": 1}, scope="read")
    ).status_code == 403
    assert (await org.delete(f"/categories/{cat['id']}", scope="read")).status_code == 403
    assert (
        await org.post("/categories/reorder", json={"ids": [cat["id"]]}, scope="read")
    ).status_code == 403
    assert (await org.get("/categories/audit", scope="write")).status_code == 403
    assert (await org.post("/categories", json={"name": "y"}, scope="admin")).status_code == 201
    assert (await org.get("/categories/audit", scope="admin")).status_code == 200


async def test_scope_refusal_changes_nothing(org: OrgClient) -> None:
    cat = await a_category(org)
    await org.patch(f"/categories/{cat['id']}", json={"name": "nope"}, scope="read")
    r = await org.get(f"/categories/{cat['id']}")
    assert (await r.get_json())["data"]["name"] == "Private"


async def test_revoked_key_stops_working(org: OrgClient, engine: AsyncEngine) -> None:
    assert (await org.get("/categories", scope="read")).status_code == 200
    async with shared_session(engine) as session, session.begin():
        assert await revoke_key(session, org.fingerprints["read"])
    # The NOTIFY reaches the API process's directory within moments.
    for _ in range(50):
        r = await org.get("/categories", scope="read")
        if r.status_code == 401:
            break
        await asyncio.sleep(0.05)
    assert r.status_code == 401
    assert (await org.get("/categories", scope="write")).status_code == 200


async def test_ids_of_another_org_behave_as_nonexistent(
    org: OrgClient, other_org: OrgClient
) -> None:
    theirs = await a_category(other_org)
    mine = await a_category(org)
    for method, path, body in category_endpoints(theirs["id"], mine["id"]):
        r = await org.request(method, path, json=body)
        assert r.status_code == 404, (method, path, body)
        assert (await r.get_json())["error"]["code"] == "category_not_found"
    r = await org.get(f"/categories/{theirs['slug']}")
    assert r.status_code == 404 or (await r.get_json())["data"]["id"] != theirs["id"]
    r = await org.post("/categories", json={"name": "c", "parentId": theirs["id"]})
    assert r.status_code == 400
    assert (await r.get_json())["error"]["code"] == "category_not_found"
    r = await org.patch(f"/categories/{mine['id']}", json={"parentId": theirs["id"]})
    assert r.status_code == 400
    r = await org.post("/categories/reorder", json={"ids": [theirs["id"]]})
    assert (await r.get_json())["error"]["code"] == "validation_error"
    listed = await (await org.get("/categories", query={"q": "private"})).get_json()
    assert [c["id"] for c in listed["data"]] == [mine["id"]]
    # And nothing of theirs changed.
    r = await other_org.get(f"/categories/{theirs['id']}")
    assert (await r.get_json())["data"] == theirs


async def test_query_without_an_org_bound_fails(engine: AsyncEngine) -> None:
    async with shared_session(engine) as session:
        with pytest.raises(DBAPIError, match="does not exist"):
            await session.execute(select(Category.id))
    async with engine.connect() as conn:
        with pytest.raises(DBAPIError, match="does not exist"):
            await conn.execute(text("SELECT id FROM categories"))


async def test_tenant_session_sees_only_its_schema(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    mine = await a_category(org)
    async with tenant_session(engine, other_org.info.schema_name) as session:
        ids = set((await session.execute(select(Category.id))).scalars())
    assert mine["id"] not in ids
    assert len(ids) == 1  # only the other org's default category


def test_schema_names_never_come_from_user_text() -> None:
    from tenancy.db import checked_schema_name

    for bad in ("public", "shared", 't_x"; drop schema shared; --', "T_01JD", "tenant"):
        with pytest.raises(ValueError):
            checked_schema_name(bad)
