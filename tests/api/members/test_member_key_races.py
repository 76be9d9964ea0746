"""A key for a member never holds more than the member's role allows, whatever the order of
its creation and a change of the role (issue 40): making the key reads the member under
``FOR SHARE``, a role change takes ``FOR UPDATE`` and caps the member's keys in the same
transaction, so one waits for the other."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.keys import service as keys
from api.keys.schemas import KeyCreate
from api.members import service as members
from api.members.roles import exceeding
from billing.plans import Plan
from tenancy.db import tenant_session
from tenancy.principal import Principal
from tests.api.members.helpers import make_member
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ROUNDS = 20


def admin_of(org: OrgClient) -> Principal:
    """The org's admin key as the principal a domain command gets (any door)."""
    info = org.info
    return Principal(
        info.id, info.slug, info.plan, info.schema_name, org.fingerprints["admin"], ("admin",)
    )


async def within_role(org: OrgClient, member_id: str) -> list[dict[str, Any]]:
    """The member's live keys; fails when one holds more than the member's role allows."""
    r = await org.get(f"/members/{member_id}")
    role = (await r.get_json())["data"]["role"]
    r = await org.get("/keys", query={"limit": 100})
    mine = [
        k
        for k in (await r.get_json())["data"]
        if k["memberId"] == member_id and k["revokedAt"] is None
    ]
    for key in mine:
        assert not exceeding(key["scopes"], role), (role, key["scopes"])
    return mine


def admin_key_for(member_id: str) -> dict[str, Any]:
    return {"name": "raced", "scopes": ["admin"], "memberId": member_id}


async def test_a_key_made_while_a_demotion_is_uncommitted_waits_for_it(
    org: OrgClient, engine: AsyncEngine
) -> None:
    member = await make_member(org, "admin")
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await members.update_member(session, admin_of(org), member["id"], {"role": "viewer"})
        made = asyncio.ensure_future(org.post("/keys", json=admin_key_for(member["id"])))
        await asyncio.sleep(0.3)
        assert not made.done(), "the key was made from the member's role before the change"
    r = await made
    assert r.status_code == 400, await r.get_data()
    body = await r.get_json()
    assert body["error"]["code"] == "validation_failed"
    assert body["error"]["details"][0]["field"] == "scopes"
    assert await within_role(org, member["id"]) == []


async def test_a_demotion_while_a_key_is_uncommitted_caps_that_key(
    org: OrgClient, engine: AsyncEngine
) -> None:
    member = await make_member(org, "admin")
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        created = await keys.create(
            session, admin_of(org), KeyCreate.model_validate(admin_key_for(member["id"]))
        )
        demoted = asyncio.ensure_future(
            org.patch(f"/members/{member['id']}", json={"role": "viewer"})
        )
        await asyncio.sleep(0.3)
        assert not demoted.done(), "the role changed without waiting for the member's new key"
    r = await demoted
    assert r.status_code == 200, await r.get_data()
    [key] = await within_role(org, member["id"])
    assert key["fingerprint"] == created["fingerprint"] and key["scopes"] == ["read"]


async def test_racing_key_creation_and_demotion_never_exceeds_the_role(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.PRO)
    member = await make_member(org, "admin")
    outcomes: set[int] = set()
    for n in range(ROUNDS):
        r = await org.patch(f"/members/{member['id']}", json={"role": "admin"})
        assert r.status_code == 200
        made, demoted = await asyncio.gather(
            org.post("/keys", json=admin_key_for(member["id"]) | {"name": f"round {n}"}),
            org.patch(f"/members/{member['id']}", json={"role": "viewer"}),
        )
        assert demoted.status_code == 200, await demoted.get_data()
        assert made.status_code in (201, 400), await made.get_data()
        outcomes.add(made.status_code)
        live = await within_role(org, member["id"])
        assert all(k["scopes"] == ["read"] for k in live)
    assert outcomes  # each round ended with the key capped (201) or refused (400)
