"""Races on categories: concurrent reorders, slug claims and merges of one source."""

from __future__ import annotations

import asyncio

from tests.fixtures.orgs import OrgClient


async def create(org: OrgClient, **body: object) -> dict:
    r = await org.post("/categories", json=body, scope="write")
    assert r.status_code == 201
    return (await r.get_json())["data"]


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
