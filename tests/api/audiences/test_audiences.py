"""Audiences (issue 39): ``/audiences`` for admin keys, slugs as category slugs, capped by plan
(FREE 0, STARTER 2, PRO 20, ENTERPRISE 200), audited, If-Match, another org's as nonexistent."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.api.audit.test_audit_admin import entries_of, strip_id
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

ULID = re.compile(r"^aud_[0-9A-HJKMNP-TV-Z]{26}$")


async def make(org: OrgClient, **body: Any) -> dict[str, Any]:
    r = await org.post("/audiences", json=body)
    assert r.status_code == 201, await r.get_data()
    return dict((await r.get_json())["data"])


async def error(r: Any) -> str:
    return str((await r.get_json())["error"]["code"])


async def test_an_audience_round_trips_by_id_and_by_slug(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.PRO)
    made = await make(org, name="Partners & Resellers", description="Signed in partners")
    assert ULID.match(made["id"])
    assert made["slug"] == "partners-resellers"
    assert made["name"] == "Partners & Resellers"
    assert made["description"] == "Signed in partners"
    assert made["createdAt"] == made["updatedAt"] and made["createdAt"].endswith("Z")
    for ref in (made["id"], made["slug"]):
        r = await org.get(f"/audiences/{ref}")
        assert r.status_code == 200
        assert (await r.get_json())["data"] == made
    # An auto slug that is taken gets the next suffix; a taken manual slug is a conflict.
    second = await make(org, name="Partners resellers")
    assert second["slug"] == "partners-resellers-2"
    r = await org.post("/audiences", json={"name": "X", "slug": "partners-resellers"})
    assert r.status_code == 409 and await error(r) == "slug_conflict"


async def test_list_pages_oldest_first(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.PRO)
    made = [await make(org, name=f"Group {n}") for n in range(3)]
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        path = "/audiences?limit=2" + (f"&cursor={cursor}" if cursor else "")
        body = await (await org.get(path)).get_json()
        seen += body["data"]
        cursor = body["meta"]["pagination"]["cursor"]
        if cursor is None:
            break
    assert seen == made
    r = await org.get("/audiences?cursor=garbage")
    assert r.status_code == 400 and await error(r) == "validation_failed"


async def test_patch_changes_what_was_sent_and_keeps_the_rest(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.PRO)
    made = await make(org, name="Staff", description="Employees")
    r = await org.patch(f"/audiences/{made['slug']}", json={"name": "Employees"})
    assert r.status_code == 200
    patched = (await r.get_json())["data"]
    assert patched["name"] == "Employees" and patched["slug"] == "staff"
    assert patched["description"] == "Employees"
    r = await org.patch(f"/audiences/{made['id']}", json={"slug": "team", "description": None})
    after = (await r.get_json())["data"]
    assert after["slug"] == "team" and after["description"] is None
    assert (await org.get("/audiences/staff")).status_code == 404
    for bad in ({"name": None}, {"slug": "Not A Slug"}, {"name": ""}, {"color": "red"}):
        r = await org.patch(f"/audiences/{made['id']}", json=bad)
        assert r.status_code == 400, bad
    other = await make(org, name="Other")
    r = await org.patch(f"/audiences/{other['id']}", json={"slug": "team"})
    assert r.status_code == 409 and await error(r) == "slug_conflict"
    assert (await (await org.get(f"/audiences/{made['id']}")).get_json())["data"] == after


async def test_delete_frees_the_slug_and_the_audience_is_gone(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.PRO)
    made = await make(org, name="Beta testers")
    assert (await org.delete(f"/audiences/{made['slug']}")).status_code == 204
    for method in ("get", "patch", "delete"):
        kw = {"json": {"name": "Again"}} if method == "patch" else {}
        r = await getattr(org, method)(f"/audiences/{made['id']}", **kw)
        assert r.status_code == 404 and await error(r) == "audience_not_found"
    assert (await (await org.get("/audiences")).get_json())["data"] == []
    assert (await make(org, name="Beta testers"))["slug"] == "beta-testers"


async def test_only_admin_keys(org: OrgClient) -> None:
    made = await make(org, name="Partners")
    for scope in ("read", "write"):
        for method, path, kw in (
            ("get", "/audiences", {}),
            ("post", "/audiences", {"json": {"name": "Nope"}}),
            ("get", f"/audiences/{made['id']}", {}),
            ("patch", f"/audiences/{made['id']}", {"json": {"name": "Nope"}}),
            ("delete", f"/audiences/{made['id']}", {}),
        ):
            r = await getattr(org, method)(path, scope=scope, **kw)
            assert r.status_code == 403, (scope, method, path)
            assert await error(r) == "insufficient_scope"
    r = await org.get(f"/audiences/{made['id']}")
    assert (await r.get_json())["data"] == made


async def test_another_orgs_audience_does_not_exist(org: OrgClient, other_org: OrgClient) -> None:
    made = await make(org, name="Partners")
    for ref in (made["id"], made["slug"]):
        r = await other_org.get(f"/audiences/{ref}")
        assert r.status_code == 404 and await error(r) == "audience_not_found"
        r = await other_org.delete(f"/audiences/{ref}")
        assert r.status_code == 404
    assert (await org.get(f"/audiences/{made['id']}")).status_code == 200


async def test_caps_per_plan_hold_under_concurrent_creates(org_factory: OrgFactory) -> None:
    free = await org_factory(Plan.FREE)
    r = await free.post("/audiences", json={"name": "Partners"})
    assert r.status_code == 402 and await error(r) == "plan_limit_reached"
    starter = await org_factory(Plan.STARTER)
    results = await asyncio.gather(
        *(starter.post("/audiences", json={"name": f"Group {n}"}) for n in range(5))
    )
    assert sorted(r.status_code for r in results) == [201, 201, 402, 402, 402]
    listed = (await (await starter.get("/audiences")).get_json())["data"]
    assert len(listed) == 2
    # A deleted audience frees its place.
    assert (await starter.delete(f"/audiences/{listed[0]['id']}")).status_code == 204
    assert (await starter.post("/audiences", json={"name": "Again"})).status_code == 201


async def test_if_match_guards_patch_and_delete(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.PRO)
    made = await make(org, name="Partners")
    r = await org.get(f"/audiences/{made['id']}")
    tag = r.headers["ETag"]
    r = await org.patch(
        f"/audiences/{made['id']}", json={"name": "P2"}, headers={"If-Match": '"stale"'}
    )
    assert r.status_code == 412
    r = await org.patch(f"/audiences/{made['id']}", json={"name": "P2"}, headers={"If-Match": tag})
    assert r.status_code == 200
    r = await org.delete(f"/audiences/{made['id']}", headers={"If-Match": tag})
    assert r.status_code == 412
    assert (await org.get(f"/audiences/{made['id']}")).status_code == 200


async def test_every_change_is_in_the_audit_log(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await org_factory(Plan.PRO)
    made = await make(org, name="Partners", description="a")
    r = await org.patch(f"/audiences/{made['id']}", json={"description": "b", "name": "Partners"})
    patched = (await r.get_json())["data"]
    assert (await org.delete(f"/audiences/{made['id']}")).status_code == 204
    entries = [strip_id(e) for e in await entries_of(engine, org, resource="audience")]
    actions = [(e["action"], e["resourceId"], e["before"], e["after"]) for e in entries]
    assert actions == [
        ("created", made["id"], None, made),
        ("updated", made["id"], {"description": "a"}, {"description": "b"}),
        ("deleted", made["id"], patched, None),
    ]
