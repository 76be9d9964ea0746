"""One door (issue 40), the MCP row: a member's key at ``/mcp/{org}`` acts as its member,
as over REST. Before, MCP bound the key but not its member: an editor's ``create_draft`` was
recorded as ``{"type": "apiKey"}``, so the same editor then approved it over REST (200) and
published it: four eyes walked around."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.api.audit.conftest import relayed_audit
from tests.api.keys.helpers import as_key
from tests.api.mcp.conftest import connect, mcp_url
from tests.api.members.helpers import member_actor
from tests.api.questions.helpers import create, error_code
from tests.api.questions.test_review import require_review, team
from tests.conftest import OrgFactory
from tests.fixtures.bounded import ApiProcess


async def test_a_members_mcp_draft_is_the_members_and_they_cannot_approve_it(
    served: ApiProcess, org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await org_factory(Plan.PRO)
    people = await team(org)
    editor, editor_key = people["editor"]
    _, editor2_key = people["editor2"]
    q = await create(org, status="published", title="Where is my parcel?")
    assert (await require_review(org)).status_code == 200
    async with connect(mcp_url(served, org.slug), editor_key) as client:
        saved = await client.call_tool(
            "create_draft", {"idOrSlug": q["slug"], "answer": "Track it from **Orders**."}
        )
        assert not saved.is_error, saved.content
    path = f"/questions/{q['id']}/draft"
    r = await as_key(org, editor_key, "GET", path)
    draft = (await r.get_json())["data"]
    assert draft["updatedBy"] == member_actor(editor, editor_key)
    # The same member over REST: the four-eyes refusal REST alone gives.
    r = await as_key(org, editor_key, "POST", f"{path}/approve", json={})
    assert r.status_code == 403 and error_code(await r.get_json()) == "self_approval"
    r = await as_key(org, editor_key, "POST", f"{path}/publish", json={"force": True})
    assert r.status_code == 403 and error_code(await r.get_json()) == "review_required"
    entries = await relayed_audit(engine, org, resource="question")
    saved_entry = next(e for e in entries if e["action"] == "draft_saved")
    assert saved_entry["actor"] == member_actor(editor, editor_key)
    # Another editor approves; then it publishes.
    r = await as_key(org, editor2_key, "POST", f"{path}/approve", json={})
    assert r.status_code == 200, await r.get_data()
    r = await as_key(org, editor_key, "POST", f"{path}/publish", json={})
    assert r.status_code == 200, await r.get_data()
    assert (await r.get_json())["data"]["answer"] == "Track it from **Orders**."
