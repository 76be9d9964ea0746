"""Helpers of the member tests: members and member keys made through the API."""

from __future__ import annotations

import itertools
from typing import Any

from tests.api.keys.helpers import make_key
from tests.fixtures.orgs import OrgClient

_n = itertools.count()


async def make_member(org: OrgClient, role: str = "author", **body: Any) -> dict[str, Any]:
    n = next(_n)
    body = {"email": f"person{n}@example.com", "name": f"Person {n}", "role": role, **body}
    r = await org.post("/members", json=body)
    assert r.status_code == 201, await r.get_data()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def member_key(org: OrgClient, member: dict[str, Any], scopes: list[str]) -> str:
    created = await make_key(
        org, name=f"key of {member['name']}", scopes=scopes, memberId=member["id"]
    )
    assert created["memberId"] == member["id"]
    key: str = created["key"]
    return key


def member_actor(member: dict[str, Any], key: str) -> dict[str, str]:
    import hashlib

    return {
        "type": "member",
        "id": member["id"],
        "keyFingerprint": hashlib.sha256(key.encode()).hexdigest()[:16],
    }
