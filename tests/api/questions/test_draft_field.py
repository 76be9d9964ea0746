"""Every read of a question shows its draft (issue 30): ``draft`` is ``{updatedAt, updatedBy,
reviewState}`` or null, on GET by id and by slug (cached or not), on the plain list, a search
and a filtered list. Publishable keys never see it (null): drafts are internal. Writes,
events and audit snapshots show it as a secret key's GET does (issue 40:
``tests/api/webhooks/test_one_representation.py``)."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.keys.helpers import as_key, make_public_key
from tests.api.members.helpers import make_member, member_actor, member_key
from tests.api.questions.helpers import create
from tests.api.questions.test_read_json import cache_off, expected_read
from tests.fixtures.orgs import OrgClient

__all__ = ["cache_off"]
READS = 8  # the reads of ``reads``


async def reads(org: OrgClient, q: dict[str, Any], key: str | None = None) -> list[Any]:
    """The question's ``draft`` as each read shows it (with the org's read key, else ``key``)."""
    paths = (
        f"/questions/{q['id']}",
        f"/questions/{q['slug']}",
        f"/questions/{q['id']}",  # again: the cached read
        "/questions",
        "/questions?status=published",
        f"/questions?q={q['title'].split()[0]}",
        f"/questions?category={q['categoryId']}",
        f"/answers?q={q['title']}",
    )
    shown = []
    for path in paths:
        if key is None:
            r = await org.get(path, scope="read")
        else:
            r = await as_key(org, key, "GET", path)
        assert r.status_code == 200, (path, await r.get_data())
        data = (await r.get_json())["data"]
        if path.startswith("/answers"):
            data = [item["question"] for item in data]
        if isinstance(data, list):
            data = next(item for item in data if item["id"] == q["id"])
        shown.append(data["draft"])
    return shown


async def test_every_read_shows_the_draft_summary(org: OrgClient, other_org: OrgClient) -> None:
    q = await create(org, status="published", title="Pineapple refunds")
    assert await reads(org, q) == [None] * READS
    editor = await make_member(org, "editor")
    key = await member_key(org, editor, ["write"])
    r = await as_key(org, key, "PUT", f"/questions/{q['id']}/draft", json={"title": "New"})
    assert r.status_code == 200, await r.get_data()
    draft = (await r.get_json())["data"]
    summary = {"updatedAt": draft["updatedAt"], "updatedBy": member_actor(editor, key)}
    assert await reads(org, q) == [{**summary, "reviewState": None}] * READS
    r = await org.post(f"/questions/{q['id']}/draft/review", json={}, scope="write")
    assert r.status_code == 200, await r.get_data()
    reviewed = (await r.get_json())["data"]
    pending = {
        "updatedAt": reviewed["updatedAt"],
        "updatedBy": reviewed["updatedBy"],
        "reviewState": "pending",
    }
    assert await reads(org, q) == [pending] * READS
    # The live question is what the reads serve beside it.
    r = await org.get(f"/questions/{q['id']}", scope="read")
    assert (await r.get_json())["data"] == {**q, "externalId": None, "draft": pending}
    # Publishable keys see the live question only: no draft.
    public = await make_public_key(org)
    assert await reads(org, q, public["key"]) == [None] * READS
    # Another org's question id is nonexistent.
    r = await other_org.get(f"/questions/{q['id']}", scope="read")
    assert r.status_code == 404
    # Discarded: null again.
    assert (await org.delete(f"/questions/{q['id']}/draft", scope="write")).status_code == 204
    assert await reads(org, q) == [None] * READS


async def test_a_published_draft_leaves_null(org: OrgClient) -> None:
    q = await create(org, status="published", title="Mango shipping")
    r = await org.request(
        "PUT", f"/questions/{q['id']}/draft", json={"answer": "Soon"}, scope="write"
    )
    assert r.status_code == 200
    assert (await reads(org, q))[0] is not None
    r = await org.post(f"/questions/{q['id']}/draft/publish", json={}, scope="write")
    assert r.status_code == 200, await r.get_data()
    assert await reads(org, q) == [None] * READS


async def test_the_draft_json_from_sql_is_what_orjson_makes(
    org: OrgClient, engine: AsyncEngine, cache_off: None
) -> None:
    """The hot read's body (built in PostgreSQL) with a member's draft under review is byte
    for byte the app's encoding of the Python read."""
    q = await create(org, status="published", title="Kiwi")
    author = await make_member(org, "author")
    key = await member_key(org, author, ["write"])
    r = await as_key(org, key, "PUT", f"/questions/{q['id']}/draft", json={"answer": "Later"})
    assert r.status_code == 200
    assert (await org.post(f"/questions/{q['id']}/draft/review", json={})).status_code == 200
    r = await org.get(f"/questions/{q['id']}", scope="read")
    body = await r.get_data()
    assert body == await expected_read(engine, org, q["id"], "en")
    assert orjson.loads(body)["data"]["draft"]["updatedBy"]["keyFingerprint"]
    r = await org.get("/questions", scope="read")
    assert orjson.loads(await r.get_data())["data"] == [orjson.loads(body)["data"]]
