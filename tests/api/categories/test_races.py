"""Races on categories: concurrent reorders, slug claims and merges of one source; and the
hierarchy under concurrent PATCHes, creates, merges and deletes (issue 13): never a cycle,
never a live category under a deleted one, never a 500."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from quart import Quart

from billing.plans import Plan
from tests.fixtures.orgs import OrgClient


async def create(org: OrgClient, **body: object) -> dict[str, Any]:
    r = await org.post("/categories", json=body, scope="write")
    assert r.status_code == 201
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def test_concurrent_slug_claims_one_wins(org: OrgClient) -> None:
    for _ in range(3):
        results = await asyncio.gather(
            *(
                org.post("/categories", json={"name": f"claim {i}", "slug": "contested"})
                for i in range(6)
            )
        )
        statuses = sorted(r.status_code for r in results)
        assert statuses[0] in (201, 409)
        codes = [(await r.get_json()).get("error", {}).get("code") for r in results]
        assert statuses.count(201) == 1
        assert all(
            c == "slug_conflict"
            for s, c in zip([r.status_code for r in results], codes, strict=True)
            if s == 409
        )
        body = await (await org.get("/categories", query={"limit": 100})).get_json()
        assert [c["slug"] for c in body["data"]].count("contested") == 1
        for c in body["data"]:
            if c["slug"] == "contested":
                await org.delete(f"/categories/{c['id']}")


async def test_concurrent_reorders_leave_one_consistent_order(org: OrgClient) -> None:
    cats = [await create(org, name=f"R{i}") for i in range(6)]
    ids = [c["id"] for c in cats]
    orders = [ids, list(reversed(ids)), ids[3:] + ids[:3]]
    results = await asyncio.gather(
        *(org.post("/categories/reorder", json={"ids": o}, scope="write") for o in orders * 3)
    )
    assert all(r.status_code == 200 for r in results)
    final = {}
    for cid in ids:
        final[cid] = (await (await org.get(f"/categories/{cid}")).get_json())["data"]["order"]
    assert [cid for cid, _ in sorted(final.items(), key=lambda kv: kv[1])] in orders
    assert sorted(final.values()) == list(range(6))


async def test_concurrent_merges_of_one_source(org: OrgClient) -> None:
    source = await create(org, name="Source")
    targets = [await create(org, name=f"Target {i}") for i in range(4)]
    children = [await create(org, name=f"Kid {i}", parentId=source["id"]) for i in range(3)]
    results = await asyncio.gather(
        *(
            org.post(
                "/categories/merge",
                json={"sourceId": source["id"], "targetId": t["id"], "deleteSource": True},
            )
            for t in targets
        )
    )
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200, 404, 404, 404]
    winner = next(r for r in results if r.status_code == 200)
    assert (await winner.get_json())["data"]["childrenMoved"] == 3
    parents = {
        (await (await org.get(f"/categories/{k['id']}")).get_json())["data"]["parentId"]
        for k in children
    }
    assert len(parents) == 1 and parents <= {t["id"] for t in targets}


# ---- the hierarchy under concurrent changes (issue 13) -------------------------------------

ROUNDS = 8
CYCLE = {"field": "parentId", "issue": "would create a cycle"}
INSIDE_SOURCE = {"field": "targetId", "issue": "inside the source's subtree"}


def twin(org: OrgClient, app: Quart) -> OrgClient:
    """The same org and keys through a second test client: another connection, another
    request transaction, as two API clients would be."""
    return dataclasses.replace(org, client=app.test_client())


async def error_of(response: Any) -> tuple[int, str | None, list[dict[str, str]]]:
    body = await response.get_json()
    error = (body or {}).get("error", {})
    return response.status_code, error.get("code"), error.get("details", [])


async def assert_forest(org: OrgClient) -> dict[str, str | None]:
    """Every live category's parent is a live category and no chain of parents loops.
    Returns each live category's parent id."""
    parents: dict[str, str | None] = {}
    after: str | None = None
    while True:
        query: dict[str, Any] = {"limit": 100} | ({"cursor": after} if after else {})
        body = await (await org.get("/categories", query=query, scope="read")).get_json()
        parents |= {c["id"]: c["parentId"] for c in body["data"]}
        after = body["meta"]["pagination"]["cursor"]
        if not after:
            break
    for cid, parent in parents.items():
        assert parent is None or parent in parents, f"{cid} is under a deleted category {parent}"
        seen = {cid}
        while parent is not None:
            assert parent not in seen, f"cycle through {cid}"
            seen.add(parent)
            parent = parents[parent]
    return parents


async def test_crossed_parent_patches_never_make_a_cycle(org_factory: Any, app: Quart) -> None:
    """``A.parentId = B`` and ``B.parentId = A`` at once: one wins, the other gets the error a
    direct cycle gets (400 ``validation_failed``, ``parentId``: would create a cycle)."""
    org = await org_factory(Plan.PRO)
    other = twin(org, app)
    for _ in range(ROUNDS):
        a, b = await create(org, name="Cross A"), await create(org, name="Cross B")
        results = await asyncio.gather(
            org.patch(f"/categories/{a['id']}", json={"parentId": b["id"]}, scope="write"),
            other.patch(f"/categories/{b['id']}", json={"parentId": a["id"]}, scope="write"),
        )
        outcomes = sorted([await error_of(r) for r in results], key=lambda o: o[0])
        assert outcomes[0] == (200, None, [])
        assert outcomes[1] == (
            400,
            "validation_failed",
            [{"field": "parentId", "issue": "would create a cycle"}],
        )
        parents = await assert_forest(org)
        assert (parents[a["id"]], parents[b["id"]]) in ((b["id"], None), (None, a["id"]))


async def test_a_ring_of_parent_patches_never_closes(org_factory: Any, app: Quart) -> None:
    """``A -> B``, ``B -> C`` and ``C -> A`` at once: at most two of them can hold."""
    org = await org_factory(Plan.PRO)
    clients = [org, twin(org, app), twin(org, app)]
    for _ in range(ROUNDS // 2):
        ring = [await create(org, name=f"Ring {n}") for n in range(3)]
        results = await asyncio.gather(
            *(
                client.patch(
                    f"/categories/{ring[n]['id']}",
                    json={"parentId": ring[(n + 1) % 3]["id"]},
                    scope="write",
                )
                for n, client in enumerate(clients)
            )
        )
        statuses = sorted(r.status_code for r in results)
        assert statuses == [200, 200, 400]
        await assert_forest(org)


async def test_a_create_under_a_parent_being_merged_away(org_factory: Any, app: Quart) -> None:
    """A create that names the merge's source as its parent, while the merge soft-deletes it:
    either the create came first (the merge then moves the new child to the target) or it
    came second (400 ``category_not_found`` on ``parentId``, as for any deleted parent). Never
    a live child of a deleted category."""
    org = await org_factory(Plan.PRO)
    other = twin(org, app)
    for _ in range(ROUNDS):
        source, target = await create(org, name="Merged away"), await create(org, name="Kept")
        merged, created = await asyncio.gather(
            org.post(
                "/categories/merge",
                json={"sourceId": source["id"], "targetId": target["id"], "deleteSource": True},
            ),
            other.post(
                "/categories", json={"name": "Late child", "parentId": source["id"]}, scope="write"
            ),
        )
        assert merged.status_code == 200
        if created.status_code == 201:
            child = (await created.get_json())["data"]
            got = await (await org.get(f"/categories/{child['id']}", scope="read")).get_json()
            assert got["data"]["parentId"] == target["id"]
        else:
            assert await error_of(created) == (
                400,
                "category_not_found",
                [{"field": "parentId", "issue": "not found"}],
            )
        await assert_forest(org)


async def test_a_patch_onto_a_parent_being_merged_away(org_factory: Any, app: Quart) -> None:
    """``X.parentId = S`` while S is merged into T and deleted: X ends under T, or the PATCH
    is refused (400 ``category_not_found``); X is never left under the deleted S."""
    org = await org_factory(Plan.PRO)
    other = twin(org, app)
    for _ in range(ROUNDS):
        source, target = await create(org, name="Merged away"), await create(org, name="Kept")
        moved = await create(org, name="Moving")
        merged, patched = await asyncio.gather(
            org.post(
                "/categories/merge",
                json={"sourceId": source["id"], "targetId": target["id"], "deleteSource": True},
            ),
            other.patch(
                f"/categories/{moved['id']}", json={"parentId": source["id"]}, scope="write"
            ),
        )
        assert merged.status_code == 200
        parents = await assert_forest(org)
        if patched.status_code == 200:
            assert parents[moved["id"]] == target["id"]
        else:
            assert await error_of(patched) == (
                400,
                "category_not_found",
                [{"field": "parentId", "issue": "not found"}],
            )
            assert parents[moved["id"]] is None


async def test_a_merge_and_a_patch_into_the_source_subtree_never_make_a_cycle(
    org_factory: Any, app: Quart
) -> None:
    """The merge moves S's child K under T (T is under A) while a PATCH puts A under K: each
    check passes alone (T is not under S; K is not under A), and the two rows they lock
    differ; together they would close the loop K -> T -> A -> K."""
    org = await org_factory(Plan.PRO)
    other = twin(org, app)
    for _ in range(ROUNDS):
        source, above = await create(org, name="Source"), await create(org, name="Above")
        target = await create(org, name="Target", parentId=above["id"])
        kid = await create(org, name="Kid", parentId=source["id"])
        merged, patched = await asyncio.gather(
            org.post(
                "/categories/merge",
                json={"sourceId": source["id"], "targetId": target["id"], "deleteSource": True},
            ),
            other.patch(f"/categories/{above['id']}", json={"parentId": kid["id"]}, scope="write"),
        )
        outcomes = (await error_of(merged), await error_of(patched))
        # Merge first: the PATCH finds K under A (a cycle). PATCH first: the merge finds T
        # inside S's subtree.
        assert outcomes in (
            ((200, None, []), (400, "validation_failed", [CYCLE])),
            ((400, "validation_failed", [INSIDE_SOURCE]), (200, None, [])),
        )
        await assert_forest(org)


async def test_a_create_or_patch_under_a_category_being_deleted(
    org_factory: Any, app: Quart
) -> None:
    """A child created or moved under D while D is deleted: it ends under D's parent (the
    delete moves D's children up) or is refused with 400 ``category_not_found``; never a 500."""
    org = await org_factory(Plan.PRO)
    clients = [org, twin(org, app), twin(org, app)]
    for _ in range(ROUNDS):
        top = await create(org, name="Top")
        doomed = await create(org, name="Doomed", parentId=top["id"])
        moved = await create(org, name="Moving")
        deleted, created, patched = await asyncio.gather(
            clients[0].delete(f"/categories/{doomed['id']}", scope="write"),
            clients[1].post(
                "/categories", json={"name": "Late", "parentId": doomed["id"]}, scope="write"
            ),
            clients[2].patch(
                f"/categories/{moved['id']}", json={"parentId": doomed["id"]}, scope="write"
            ),
        )
        assert deleted.status_code == 204
        parents = await assert_forest(org)
        refused = (400, "category_not_found", [{"field": "parentId", "issue": "not found"}])
        if created.status_code == 201:
            child = (await created.get_json())["data"]
            assert parents[child["id"]] == top["id"]
        else:
            assert await error_of(created) == refused
        if patched.status_code == 200:
            assert parents[moved["id"]] == top["id"]
        else:
            assert await error_of(patched) == refused
