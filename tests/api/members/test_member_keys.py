"""Keys of members (issue 30): scopes capped by role, the member actor everywhere,
deactivation stops the keys within a second, ``faq keys create --member``."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.audit.conftest import relayed_audit
from tests.api.keys.helpers import as_key, make_key
from tests.api.members.helpers import make_member, member_actor, member_key
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient
from tests.test_cli import faq

pytestmark = pytest.mark.slow


async def test_scopes_never_exceed_the_role(org: OrgClient) -> None:
    cases = {
        "viewer": (["read"], [["write"], ["review"], ["admin"]]),
        "author": (["read", "write"], [["review"], ["admin"], ["write", "review"]]),
        "editor": (["write", "review"], [["admin"]]),
        "admin": (["admin"], []),
    }
    for role, (allowed, refused) in cases.items():
        member = await make_member(org, role)
        await member_key(org, member, allowed)
        for scopes in refused:
            r = await org.post(
                "/keys", json={"name": "k", "scopes": scopes, "memberId": member["id"]}
            )
            assert r.status_code == 400, (role, scopes)
            body = await r.get_json()
            assert body["error"]["code"] == "validation_failed"
            assert body["error"]["details"][0]["field"] == "scopes"
    member = await make_member(org, "admin")
    r = await org.post(
        "/keys",
        json={
            "name": "site",
            "scopes": ["public"],
            "allowedOrigins": ["https://a.example"],
            "memberId": member["id"],
        },
    )
    assert r.status_code == 400
    await org.delete(f"/members/{member['id']}")
    r = await org.post("/keys", json={"name": "k", "scopes": ["read"], "memberId": member["id"]})
    assert r.status_code == 400  # a deactivated member gets no new key


async def test_a_lower_role_lowers_the_keys_at_once(org: OrgClient) -> None:
    member = await make_member(org, "admin")
    key = await member_key(org, member, ["admin"])
    r = await as_key(org, key, "GET", "/members")
    assert r.status_code == 200
    r = await org.patch(f"/members/{member['id']}", json={"role": "author"})
    assert r.status_code == 200
    r = await as_key(org, key, "GET", "/members")
    assert r.status_code == 403
    r = await as_key(org, key, "POST", "/categories", json={"name": "Still writes"})
    assert r.status_code == 201
    r = await org.get("/keys", query={"limit": 100})
    listed = {k["memberId"]: k for k in (await r.get_json())["data"] if k["memberId"]}
    assert listed[member["id"]]["scopes"] == ["write"]


async def test_deactivation_stops_the_members_keys_within_a_second(org: OrgClient) -> None:
    member = await make_member(org, "author")
    key = await member_key(org, member, ["write"])
    r = await as_key(org, key, "GET", "/categories")
    assert r.status_code == 200
    r = await org.delete(f"/members/{member['id']}")
    assert r.status_code == 204
    started = time.monotonic()
    while True:
        r = await as_key(org, key, "GET", "/categories")
        if r.status_code == 401:
            break
        assert time.monotonic() - started < 1.0, "the key still works a second later"
    r = await org.get("/keys", query={"limit": 100})
    mine = [k for k in (await r.get_json())["data"] if k["memberId"] == member["id"]]
    assert mine and all(k["revokedAt"] for k in mine)


async def test_the_actor_of_a_members_key_is_the_member(
    org: OrgClient, engine: AsyncEngine
) -> None:
    member = await make_member(org, "author")
    key = await member_key(org, member, ["write"])
    actor = member_actor(member, key)
    r = await as_key(org, key, "POST", "/categories", json={"name": "By a person"})
    assert r.status_code == 201
    r = await org.get("/categories/audit")
    entries = (await r.get_json())["data"]
    assert entries[0]["action"] == "created" and entries[0]["actor"] == actor
    question = await create(org)
    r = await as_key(org, key, "PATCH", f"/questions/{question['id']}", json={"title": "Edited"})
    assert r.status_code == 200
    r = await org.get(f"/questions/{question['id']}/revisions")
    assert (await r.get_json())["data"][0]["actor"] == actor
    audit = await relayed_audit(engine, org, limit=100)
    by_member = [e for e in audit if e["actor"] == actor]
    assert {(e["resource"], e["action"]) for e in by_member} >= {
        ("category", "created"),
        ("question", "updated"),
    }
    # A key of no member keeps the key actor.
    plain = await make_key(org, scopes=["write"])
    r = await as_key(org, plain["key"], "POST", "/categories", json={"name": "By a key"})
    r = await org.get("/categories/audit")
    assert (await r.get_json())["data"][0]["actor"] == {
        "type": "apiKey",
        "id": plain["fingerprint"],
    }


async def test_faq_keys_create_member(org: OrgClient) -> None:
    member = await make_member(org, "viewer")
    made = faq("keys", "create", org.slug, "--scopes", "read", "--member", member["id"], "--json")
    assert made.returncode == 0, made.stderr
    issued: dict[str, Any] = json.loads(made.stdout)
    r = await org.get("/keys", query={"limit": 100})
    listed = {k["fingerprint"]: k for k in (await r.get_json())["data"]}
    assert listed[issued["fingerprint"]]["memberId"] == member["id"]
    over = faq("keys", "create", org.slug, "--scopes", "write", "--member", member["id"])
    assert over.returncode == 2 and "viewer" in over.stderr
    unknown = faq("keys", "create", org.slug, "--scopes", "read", "--member", "mem_nobody")
    assert unknown.returncode == 2
