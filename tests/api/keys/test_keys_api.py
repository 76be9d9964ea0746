"""Keys managed by API (issue 16): list, create (key shown once), revoke, expiry, last use."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import shared_session
from tenancy.models import ApiKey
from tests.api.keys.helpers import SITE, as_key, make_key, make_public_key
from tests.fixtures.orgs import OrgClient

KEY_FIELDS = {
    "fingerprint",
    "name",
    "scopes",
    "allowedOrigins",
    "createdAt",
    "lastUsedAt",
    "expiresAt",
    "revokedAt",
    "memberId",  # issue 30: the member the key belongs to, or null
}


def in_a_day() -> str:
    return (datetime.now(UTC) + timedelta(days=1)).isoformat().replace("+00:00", "Z")


async def test_create_shows_the_key_once_and_list_never(org: OrgClient) -> None:
    created = await make_key(org, name="ci deploy", scopes=["write"], expiresAt=in_a_day())
    assert set(created) == KEY_FIELDS | {"key"}
    assert created["key"].startswith("faq_") and not created["key"].startswith("faq_pk_")
    assert created["name"] == "ci deploy"
    assert created["scopes"] == ["write"]
    assert created["allowedOrigins"] == []
    assert created["revokedAt"] is None and created["lastUsedAt"] is None
    assert created["expiresAt"].endswith("Z") and created["createdAt"].endswith("Z")
    # The new key works at once.
    r = await as_key(org, created["key"], "POST", "/categories", json={"name": "By new key"})
    assert r.status_code == 201, await r.get_data()
    r = await org.get("/keys")
    assert r.status_code == 200
    body = await r.get_json()
    raw = await r.get_data()
    assert created["key"].encode() not in raw
    listed = {k["fingerprint"]: k for k in body["data"]}
    assert set(listed) >= {created["fingerprint"], *org.fingerprints.values()}
    for item in body["data"]:
        assert set(item) == KEY_FIELDS
    assert body["meta"]["pagination"]["limit"] == 20


async def test_the_hash_is_never_exposed(org: OrgClient, engine: AsyncEngine) -> None:
    created = await make_key(org)
    async with shared_session(engine) as session:
        digest = (
            await session.execute(
                select(ApiKey.key_hash).where(ApiKey.fingerprint == created["fingerprint"])
            )
        ).scalar_one()
    r = await org.get("/keys", query={"limit": 100})
    assert digest.encode() not in await r.get_data()
    assert digest not in str(created)


async def test_list_is_paginated_with_a_cursor(org: OrgClient) -> None:
    for i in range(3):
        await make_key(org, name=f"k{i}")
    seen: list[str] = []
    cursor = None
    while True:
        query: dict[str, Any] = {"limit": 2}
        if cursor:
            query["cursor"] = cursor
        body = await (await org.get("/keys", query=query)).get_json()
        seen += [k["fingerprint"] for k in body["data"]]
        cursor = body["meta"]["pagination"]["cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 6
    r = await org.get("/keys", query={"cursor": "forged"})
    assert r.status_code == 400


async def test_keys_routes_need_admin(org: OrgClient) -> None:
    for scope in ("read", "write"):
        assert (await org.get("/keys", scope=scope)).status_code == 403
        r = await org.post("/keys", json={"name": "x", "scopes": ["read"]}, scope=scope)
        assert r.status_code == 403
        r = await org.delete(f"/keys/{org.fingerprints['read']}", scope=scope)
        assert r.status_code == 403
    public = await make_public_key(org)
    r = await as_key(org, public["key"], "GET", "/keys")
    assert r.status_code == 403
    assert (await r.get_json())["error"]["code"] == "insufficient_scope"


def origins(*values: str) -> dict[str, Any]:
    return {"name": "x", "scopes": ["public"], "allowedOrigins": list(values)}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scopes": ["read"]}, "name"),
        ({"name": "", "scopes": ["read"]}, "name"),
        ({"name": "x"}, "scopes"),
        ({"name": "x", "scopes": []}, "scopes"),
        ({"name": "x", "scopes": ["owner"]}, "scopes"),
        ({"name": "x", "scopes": ["public", "read"]}, "scopes"),
        ({"name": "x", "scopes": ["read"], "expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt"),
        ({"name": "x", "scopes": ["read"], "expiresAt": "2099-01-01T00:00:00"}, "expiresAt"),
        ({"name": "x", "scopes": ["read"], "allowedOrigins": [SITE]}, "allowedOrigins"),
        (origins("ftp://a.example"), "allowedOrigins"),
        (origins("https://a.example/path"), "allowedOrigins"),
        (origins("https://a.example/"), "allowedOrigins"),
        (origins("a.example"), "allowedOrigins"),
        (origins("https://a.example?x=1"), "allowedOrigins"),
        (origins("https://u@a.example"), "allowedOrigins"),
        (origins("https://a.example:99999"), "allowedOrigins"),
        (
            {
                "name": "x",
                "scopes": ["public"],
                "allowedOrigins": [f"https://s{i}.example" for i in range(21)],
            },
            "allowedOrigins",
        ),
        ({"name": "x", "scopes": ["read"], "key": "faq_mine"}, "key"),
    ],
)
async def test_create_validates_each_field(
    org: OrgClient, body: dict[str, Any], field: str
) -> None:
    r = await org.post("/keys", json=body)
    assert r.status_code == 400, (body, await r.get_data())
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_failed"
    assert field in {d["field"] for d in error["details"]}, error


async def test_origins_are_kept_canonical(org: OrgClient) -> None:
    created = await make_public_key(
        org, ["HTTPS://Shop.Example:443", "http://localhost:8080", "http://localhost:8080"]
    )
    assert created["allowedOrigins"] == ["https://shop.example", "http://localhost:8080"]
    assert created["key"].startswith("faq_pk_")
    assert created["scopes"] == ["public"]


async def test_revoke_is_effective_and_204(org: OrgClient) -> None:
    created = await make_key(org, scopes=["read"])
    assert (await as_key(org, created["key"], "GET", "/categories")).status_code == 200
    r = await org.delete(f"/keys/{created['fingerprint']}")
    assert r.status_code == 204
    started = time.monotonic()
    while True:
        r = await as_key(org, created["key"], "GET", "/categories")
        if r.status_code == 401 or time.monotonic() - started > 1:
            break
        await asyncio.sleep(0.05)
    assert r.status_code == 401
    assert (await r.get_json())["error"]["code"] == "unauthorized"
    listed = {k["fingerprint"]: k for k in (await (await org.get("/keys")).get_json())["data"]}
    assert listed[created["fingerprint"]]["revokedAt"] is not None
    # Again: still 204, nothing changes.
    assert (await org.delete(f"/keys/{created['fingerprint']}")).status_code == 204


async def test_another_orgs_fingerprint_is_not_found(org: OrgClient, other_org: OrgClient) -> None:
    for fingerprint in (other_org.fingerprints["read"], "0123456789abcdef", "nope"):
        r = await org.delete(f"/keys/{fingerprint}")
        assert r.status_code == 404, fingerprint
        assert (await r.get_json())["error"]["code"] == "key_not_found"
    # The other org's key still works.
    assert (await other_org.get("/categories", scope="read")).status_code == 200
    listed = [k["fingerprint"] for k in (await (await org.get("/keys")).get_json())["data"]]
    assert other_org.fingerprints["read"] not in listed


async def test_the_last_active_admin_key_cannot_be_revoked(
    org: OrgClient, engine: AsyncEngine
) -> None:
    second = await make_key(org, scopes=["admin"])
    r = await org.delete(f"/keys/{second['fingerprint']}")
    assert r.status_code == 204
    r = await org.delete(f"/keys/{org.fingerprints['admin']}")
    assert r.status_code == 409
    assert (await r.get_json())["error"]["code"] == "last_admin_key"
    # An expired admin key does not count as active.
    expired = await make_key(org, scopes=["admin"], expiresAt=in_a_day())
    async with shared_session(engine) as session, session.begin():
        await session.execute(
            update(ApiKey)
            .where(ApiKey.fingerprint == expired["fingerprint"])
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    r = await org.delete(f"/keys/{org.fingerprints['admin']}")
    assert r.status_code == 409
    # With another active admin key, the original can go (by the new one).
    third = await make_key(org, scopes=["admin"])
    r = await org.delete(f"/keys/{org.fingerprints['admin']}")
    assert r.status_code == 204
    r = await as_key(org, third["key"], "DELETE", f"/keys/{third['fingerprint']}")
    assert r.status_code == 409


async def test_concurrent_revokes_keep_one_admin_key(org: OrgClient) -> None:
    second = await make_key(org, scopes=["admin"])
    results = await asyncio.gather(
        org.delete(f"/keys/{second['fingerprint']}"),
        org.delete(f"/keys/{org.fingerprints['admin']}"),
    )
    assert sorted(r.status_code for r in results) == [204, 409]


def in_seconds(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


async def test_an_expired_key_is_unauthorized(org: OrgClient) -> None:
    created = await make_key(org, scopes=["read"], expiresAt=in_seconds(1.5))
    assert (await as_key(org, created["key"], "GET", "/categories")).status_code == 200
    # The cached record holds expiresAt: it stops at that time, no NOTIFY needed.
    await asyncio.sleep(1.6)
    r = await as_key(org, created["key"], "GET", "/categories")
    assert r.status_code == 401
    assert (await r.get_json())["error"]["code"] == "unauthorized"


async def test_last_used_at_is_recorded_off_the_request_at_most_once_a_minute(
    org: OrgClient, engine: AsyncEngine
) -> None:
    created = await make_key(org, scopes=["read"])

    async def last_used() -> datetime | None:
        async with shared_session(engine) as session:
            value: datetime | None = (
                await session.execute(
                    select(ApiKey.last_used_at).where(ApiKey.fingerprint == created["fingerprint"])
                )
            ).scalar_one()
            return value

    assert (await as_key(org, created["key"], "GET", "/categories")).status_code == 200
    for _ in range(40):
        if await last_used() is not None:
            break
        await asyncio.sleep(0.05)
    first = await last_used()
    assert first is not None
    listed = {k["fingerprint"]: k for k in (await (await org.get("/keys")).get_json())["data"]}
    assert listed[created["fingerprint"]]["lastUsedAt"] is not None
    # Within the minute, more requests write nothing more.
    for _ in range(3):
        assert (await as_key(org, created["key"], "GET", "/categories")).status_code == 200
    await asyncio.sleep(0.3)
    assert await last_used() == first
