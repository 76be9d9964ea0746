"""Members (issue 30): CRUD, validation, seats, tenancy."""

from __future__ import annotations

from typing import Any

from billing.plans import Plan
from tests.api.members.helpers import make_member
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

MEMBER_FIELDS = {"id", "email", "name", "role", "createdAt", "updatedAt", "deactivatedAt"}


def code(body: dict[str, Any]) -> str:
    value: str = body["error"]["code"]
    return value


async def test_create_read_list_update_deactivate(org: OrgClient) -> None:
    created = await make_member(org, "editor", email="Ada@Example.com", name="Ada")
    assert set(created) == MEMBER_FIELDS
    assert created["id"].startswith("mem_") and len(created["id"]) == 30
    assert created["role"] == "editor" and created["deactivatedAt"] is None
    assert created["createdAt"].endswith("Z")
    r = await org.get(f"/members/{created['id']}")
    assert r.status_code == 200 and (await r.get_json())["data"] == created
    r = await org.patch(f"/members/{created['id']}", json={"name": "Ada L.", "role": "admin"})
    assert r.status_code == 200, await r.get_json()
    updated = (await r.get_json())["data"]
    assert updated["name"] == "Ada L." and updated["role"] == "admin"
    r = await org.delete(f"/members/{created['id']}")
    assert r.status_code == 204 and await r.get_data() == b""
    r = await org.get(f"/members/{created['id']}")
    gone = (await r.get_json())["data"]
    assert gone["deactivatedAt"] is not None  # stays, for the audit trail
    r = await org.delete(f"/members/{created['id']}")
    assert r.status_code == 204  # again: nothing changes
    r = await org.patch(f"/members/{created['id']}", json={"name": "x"})
    assert r.status_code == 409 and code(await r.get_json()) == "member_deactivated"
    # Paginated, oldest first, deactivated ones included.
    second = await make_member(org)
    r = await org.get("/members", query={"limit": 1})
    page = await r.get_json()
    assert [m["id"] for m in page["data"]] == [created["id"]]
    r = await org.get(
        "/members", query={"limit": 1, "cursor": page["meta"]["pagination"]["cursor"]}
    )
    assert [m["id"] for m in (await r.get_json())["data"]] == [second["id"]]


async def test_bad_input_is_refused_and_changes_nothing(org: OrgClient) -> None:
    for body, field in (
        ({"email": "not-an-email", "name": "A", "role": "author"}, "email"),
        ({"email": "a@example.com", "name": "", "role": "author"}, "name"),
        ({"email": "a@example.com", "name": "A", "role": "owner"}, "role"),
        ({"email": "a@example.com", "name": "A", "role": "author", "id": "mem_x"}, "id"),
    ):
        r = await org.post("/members", json=body)
        assert r.status_code == 400, body
        err = await r.get_json()
        assert code(err) == "validation_failed"
        assert field in {d["field"] for d in err["error"]["details"]}, err
    r = await org.get("/members")
    assert (await r.get_json())["data"] == []
    # Writers and readers are not admins.
    for scope in ("read", "write"):
        r = await org.get("/members", scope=scope)
        assert r.status_code == 403 and code(await r.get_json()) == "insufficient_scope"


async def test_email_is_unique_among_active_members(org: OrgClient) -> None:
    first = await make_member(org, email="sam@example.com")
    r = await org.post("/members", json={"email": "SAM@example.com", "name": "S", "role": "viewer"})
    assert r.status_code == 409 and code(await r.get_json()) == "member_email_taken"
    other = await make_member(org)
    r = await org.patch(f"/members/{other['id']}", json={"email": "sam@example.com"})
    assert r.status_code == 409 and code(await r.get_json()) == "member_email_taken"
    await org.delete(f"/members/{first['id']}")
    again = await make_member(org, email="sam@example.com")  # a deactivated member frees it
    assert again["id"] != first["id"]


async def test_seats_are_capped_by_plan(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.FREE)  # 3 seats
    made = [await make_member(org) for _ in range(3)]
    r = await org.post(
        "/members", json={"email": "four@example.com", "name": "4", "role": "viewer"}
    )
    assert r.status_code == 402 and code(await r.get_json()) == "plan_limit_reached"
    r = await org.get("/members")
    assert len((await r.get_json())["data"]) == 3  # the refused one left nothing
    await org.delete(f"/members/{made[0]['id']}")
    await make_member(org)  # a deactivated member frees its seat


async def test_another_orgs_member_is_nonexistent(org: OrgClient, other_org: OrgClient) -> None:
    theirs = await make_member(other_org)
    for method, body in (("GET", None), ("PATCH", {"name": "x"}), ("DELETE", None)):
        r = await org.request(method, f"/members/{theirs['id']}", json=body)
        assert r.status_code == 404, method
        assert code(await r.get_json()) == "member_not_found"
    r = await org.post("/keys", json={"name": "k", "scopes": ["read"], "memberId": theirs["id"]})
    assert r.status_code == 400
    assert (await r.get_json())["error"]["details"][0]["field"] == "memberId"
    r = await other_org.get(f"/members/{theirs['id']}")
    assert (await r.get_json())["data"]["deactivatedAt"] is None


async def test_members_are_in_openapi(client: Any) -> None:
    r = await client.get("/openapi.json")
    paths = (await r.get_json())["paths"]
    assert "/api/v1/{org}/members" in paths and "/api/v1/{org}/members/{member_id}" in paths
