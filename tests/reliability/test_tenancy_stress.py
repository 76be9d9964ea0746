"""50 orgs hammered concurrently with interleaved requests: every response holds only its
own org's data (a checker compares each body against what that org created)."""

from __future__ import annotations

import asyncio
import random

import pytest

from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ORGS = 50
ROUNDS = 6


async def test_fifty_orgs_interleaved_never_see_each_other(org_factory: OrgFactory) -> None:
    orgs: list[OrgClient] = list(await asyncio.gather(*(org_factory() for _ in range(ORGS))))
    owned: dict[str, set[str]] = {o.slug: set() for o in orgs}
    defaults: dict[str, str] = {}
    for o in orgs:
        body = await (await o.get("/categories/uncategorized")).get_json()
        defaults[o.slug] = body["data"]["id"]
        owned[o.slug].add(body["data"]["id"])
    rng = random.Random(7)
    violations: list[str] = []

    async def one_round(o: OrgClient, n: int) -> None:
        r = await o.post("/categories", json={"name": f"{o.slug} item {n}"}, scope="write")
        assert r.status_code == 201
        created = (await r.get_json())["data"]
        owned[o.slug].add(created["id"])
        if not created["name"].startswith(o.slug):
            violations.append(f"{o.slug} created {created}")
        listed = await (await o.get("/categories", query={"limit": 100})).get_json()
        for item in listed["data"]:
            if item["id"] not in owned[o.slug]:
                violations.append(f"{o.slug} listed foreign {item['id']}")
        stranger = rng.choice(orgs)
        if stranger is not o:
            foreign_id = defaults[stranger.slug]
            r = await o.get(f"/categories/{foreign_id}")
            if r.status_code != 404:
                violations.append(f"{o.slug} read {stranger.slug}'s {foreign_id}")

    for n in range(ROUNDS):
        order = orgs[:]
        rng.shuffle(order)
        await asyncio.gather(*(one_round(o, n) for o in order))
    assert violations == []
    for o in orgs:
        listed = await (await o.get("/categories", query={"limit": 100})).get_json()
        assert {c["id"] for c in listed["data"]} == owned[o.slug]
