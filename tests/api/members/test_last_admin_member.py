"""The last-admin rule on every path that removes an admin key (issue 40): revoking a key,
lowering its member's role below admin, deactivating its member. Each is refused with 409
``last_admin_key`` when no other admin key with no expiry would be left (an expiring one
would lapse), changes nothing, and two concurrent removals of the last two cannot both
pass."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.keys import service as keys
from api.keys.schemas import KeyCreate
from api.members import service as members
from api.members.schemas import MemberCreate
from tenancy.db import tenant_session
from tenancy.principal import InsufficientScope, Principal
from tests.api.keys.helpers import as_key, make_key
from tests.api.members.helpers import make_member, member_key
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ROUNDS = 4


def in_a_day() -> str:
    return (datetime.now(UTC) + timedelta(days=1)).isoformat().replace("+00:00", "Z")


def fingerprint_of(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode()).hexdigest()[:16]


async def listed(org: OrgClient, key: str) -> dict[str, dict[str, Any]]:
    r = await as_key(org, key, "GET", "/keys?limit=100")
    assert r.status_code == 200, await r.get_data()
    return {k["fingerprint"]: k for k in (await r.get_json())["data"]}


async def make_key_as(org: OrgClient, key: str, **body: Any) -> dict[str, Any]:
    r = await as_key(org, key, "POST", "/keys", json={"name": "a key", **body})
    assert r.status_code == 201, await r.get_data()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def an_admin_owns_the_last_admin_key(org: OrgClient) -> tuple[dict[str, Any], str]:
    """An admin member whose key is the org's only admin key (the fixture's is revoked)."""
    member = await make_member(org, "admin")
    key = await member_key(org, member, ["admin"])
    r = await as_key(org, key, "DELETE", f"/keys/{org.fingerprints['admin']}")
    assert r.status_code == 204, await r.get_data()
    return member, key


async def assert_last_admin(r: Any) -> None:
    assert r.status_code == 409, await r.get_data()
    error = (await r.get_json())["error"]
    assert error["code"] == "last_admin_key"
    assert "admin key" in error["message"] and "first" in error["message"]


async def unchanged(org: OrgClient, member: dict[str, Any], key: str) -> None:
    """The member keeps its role and stays active; its key keeps admin and works."""
    r = await as_key(org, key, "GET", f"/members/{member['id']}")
    assert r.status_code == 200
    now = (await r.get_json())["data"]
    assert now["role"] == "admin" and now["deactivatedAt"] is None
    mine = (await listed(org, key))[fingerprint_of(key)]
    assert mine["scopes"] == ["admin"] and mine["revokedAt"] is None


async def test_demoting_the_owner_of_the_last_admin_key_is_refused(org: OrgClient) -> None:
    member, key = await an_admin_owns_the_last_admin_key(org)
    for role in ("editor", "author", "viewer"):
        r = await as_key(org, key, "PATCH", f"/members/{member['id']}", json={"role": role})
        await assert_last_admin(r)
        await unchanged(org, member, key)
    # A change that keeps the role is not a removal.
    r = await as_key(org, key, "PATCH", f"/members/{member['id']}", json={"name": "Still admin"})
    assert r.status_code == 200


async def test_deactivating_the_owner_of_the_last_admin_key_is_refused(org: OrgClient) -> None:
    member, key = await an_admin_owns_the_last_admin_key(org)
    r = await as_key(org, key, "DELETE", f"/members/{member['id']}")
    await assert_last_admin(r)
    await unchanged(org, member, key)


async def test_an_expiring_admin_key_does_not_count_for_members_either(org: OrgClient) -> None:
    """It would lapse: the org would be left with no admin key once it expires."""
    member, key = await an_admin_owns_the_last_admin_key(org)
    expiring = await make_key_as(org, key, scopes=["admin"], expiresAt=in_a_day())
    for method, body in (("PATCH", {"role": "editor"}), ("DELETE", None)):
        r = await as_key(org, expiring["key"], method, f"/members/{member['id']}", json=body)
        await assert_last_admin(r)
        await unchanged(org, member, key)
    # An admin key of the member that expires is not what keeps the org administrable.
    r = await as_key(
        org, key, "POST", "/members", json={"email": "o@example.com", "name": "O", "role": "admin"}
    )
    other = (await r.get_json())["data"]
    lapsing = await make_key_as(
        org, key, scopes=["admin"], memberId=other["id"], expiresAt=in_a_day()
    )
    r = await as_key(org, key, "PATCH", f"/members/{other['id']}", json={"role": "author"})
    assert r.status_code == 200, await r.get_data()
    assert (await listed(org, key))[lapsing["fingerprint"]]["scopes"] == ["write"]


async def test_with_a_second_admin_key_the_owner_can_be_demoted_or_deactivated(
    org: OrgClient,
) -> None:
    member, key = await an_admin_owns_the_last_admin_key(org)
    second = await make_key_as(org, key, scopes=["admin"], name="second")
    r = await as_key(
        org, second["key"], "PATCH", f"/members/{member['id']}", json={"role": "editor"}
    )
    assert r.status_code == 200, await r.get_data()
    assert (await listed(org, second["key"]))[fingerprint_of(key)]["scopes"] == ["write", "review"]
    r = await as_key(
        org,
        second["key"],
        "POST",
        "/members",
        json={"email": "o@example.com", "name": "O", "role": "admin"},
    )
    other = (await r.get_json())["data"]
    other_key = (await make_key_as(org, second["key"], scopes=["admin"], memberId=other["id"]))[
        "key"
    ]
    r = await as_key(org, other_key, "DELETE", f"/keys/{second['fingerprint']}")
    assert r.status_code == 204
    # The other's key is now the last: its member cannot go, until another admin key exists.
    r = await as_key(org, other_key, "DELETE", f"/members/{other['id']}")
    await assert_last_admin(r)
    third = await make_key_as(org, other_key, scopes=["admin"], name="third")
    r = await as_key(org, third["key"], "DELETE", f"/members/{other['id']}")
    assert r.status_code == 204, await r.get_data()
    assert (await listed(org, third["key"]))[fingerprint_of(other_key)]["revokedAt"] is not None


async def two_admins_own_the_last_two(
    org_factory: OrgFactory,
) -> tuple[OrgClient, str, list[tuple[dict[str, Any], str]]]:
    """Two admin members whose keys are the org's only admin keys with no expiry, and an
    expiring admin key (which does not count) to act with."""
    org = await org_factory()
    owners = []
    for _ in range(2):
        member = await make_member(org, "admin")
        owners.append((member, await member_key(org, member, ["admin"])))
    actor = (await make_key(org, scopes=["admin"], expiresAt=in_a_day(), name="actor"))["key"]
    r = await as_key(org, actor, "DELETE", f"/keys/{org.fingerprints['admin']}")
    assert r.status_code == 204
    return org, actor, owners


async def test_concurrent_removals_of_the_last_two_admin_keys_leave_one(
    org_factory: OrgFactory,
) -> None:
    def demote(m: dict[str, Any]) -> tuple[str, str, Any]:
        return ("PATCH", f"/members/{m['id']}", {"role": "viewer"})

    def deactivate(m: dict[str, Any]) -> tuple[str, str, Any]:
        return ("DELETE", f"/members/{m['id']}", None)

    def revoke(_m: dict[str, Any], key: str) -> tuple[str, str, Any]:
        return ("DELETE", f"/keys/{fingerprint_of(key)}", None)

    pairs = {
        "demote+demote": lambda a, b: (demote(a[0]), demote(b[0])),
        "deactivate+deactivate": lambda a, b: (deactivate(a[0]), deactivate(b[0])),
        "demote+revoke": lambda a, b: (demote(a[0]), revoke(*b)),
        "deactivate+revoke": lambda a, b: (deactivate(a[0]), revoke(*b)),
        "demote+deactivate": lambda a, b: (demote(a[0]), deactivate(b[0])),
    }
    for name, pair in pairs.items():
        for _ in range(ROUNDS):
            org, actor, owners = await two_admins_own_the_last_two(org_factory)
            results = await asyncio.gather(
                *(
                    as_key(org, actor, method, path, json=body)
                    for method, path, body in pair(*owners)
                )
            )
            statuses = sorted(r.status_code for r in results)
            assert statuses in ([200, 409], [204, 409]), (name, statuses)
            refused = next(r for r in results if r.status_code == 409)
            await assert_last_admin(refused)
            now = await listed(org, actor)
            left = [
                key
                for _m, key in owners
                if now[fingerprint_of(key)]["scopes"] == ["admin"]
                and now[fingerprint_of(key)]["revokedAt"] is None
            ]
            assert len(left) == 1, (name, now)


async def test_the_domain_commands_check_the_admin_scope_themselves(
    org: OrgClient, engine: AsyncEngine
) -> None:
    """Any caller (a CLI command, a job, another door) gets the refusal a route gives."""
    member = await make_member(org, "author")
    info = org.info
    writer = Principal(
        info.id, info.slug, info.plan, info.schema_name, org.fingerprints["write"], ("write",)
    )
    calls = (
        lambda s: members.update_member(s, writer, member["id"], {"role": "viewer"}),
        lambda s: members.deactivate_member(s, writer, member["id"]),
        lambda s: members.get_member(s, writer, member["id"]),
        lambda s: members.list_members(s, writer, limit=10, after=None),
        lambda s: keys.revoke(s, writer, org.fingerprints["read"]),
        lambda s: keys.list_keys(s, writer, limit=10, after=None),
        lambda s: keys.create(
            s, writer, KeyCreate.model_validate({"name": "k", "scopes": ["read"]})
        ),
        lambda s: members.create_member(
            s,
            writer,
            MemberCreate.model_validate({"email": "x@example.com", "name": "X", "role": "viewer"}),
        ),
    )
    for call in calls:
        async with tenant_session(engine, info.schema_name) as session, session.begin():
            with pytest.raises(InsufficientScope):
                await call(session)
    r = await org.get(f"/members/{member['id']}")
    assert (await r.get_json())["data"]["role"] == "author"
    assert org.fingerprints["read"] in await listed(org, org.keys["admin"])
    assert (await listed(org, org.keys["admin"]))[org.fingerprints["read"]]["revokedAt"] is None
