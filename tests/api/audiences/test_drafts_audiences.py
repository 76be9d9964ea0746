"""Issue 39 with drafts (issue 30): a draft carries ``audiences`` (checked like a direct write),
shows it, and publishing it applies it as any draft field (approval bound to the exact content,
one revision, events, audit). Under ``requireReview`` the draft is the only way to change who
reads a live question, as for its title or answer."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tasks.publishing import publish_due_questions
from tenancy.clock import iso, utcnow
from tests.api.audiences.test_audiences import error, make
from tests.api.audit.conftest import relayed_audit
from tests.api.keys.helpers import SITE, as_key, make_public_key
from tests.api.questions.helpers import create, events
from tests.api.questions.test_review import require_review, team
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def audience_org(org_factory: OrgFactory) -> OrgClient:
    org = await org_factory(Plan.PRO)
    await make(org, name="Partners")
    await make(org, name="Staff")
    return org


async def anonymous_status(org: OrgClient, path: str) -> int:
    """What an anonymous reader of the org's site gets (a publishable key, no reader token)."""
    key = (await make_public_key(org))["key"]
    r = await as_key(org, key, "GET", path, headers={"Origin": SITE})
    return int(r.status_code)


async def data(r: Any, status: int = 200) -> dict[str, Any]:
    assert r.status_code == status, await r.get_data()
    return dict((await r.get_json())["data"])


async def test_a_reviewed_draft_changes_a_live_questions_audiences(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await audience_org(org_factory)
    people = await team(org)
    author_key, editor_key = people["author"][1], people["editor"][1]
    live = await create(org, status="published", title="Partner pricing")
    assert (await require_review(org)).status_code == 200
    path = f"/questions/{live['id']}"
    # A direct change is refused under review, as a direct change of its title is.
    r = await as_key(org, author_key, "PATCH", path, json={"audiences": ["partners"]})
    assert r.status_code == 403 and await error(r) == "review_required"
    r = await as_key(org, author_key, "PATCH", path, json={"title": "Straight to live"})
    assert r.status_code == 403 and await error(r) == "review_required"
    # The draft carries them, shows them, and the live question keeps its own meanwhile.
    draft = await data(
        await as_key(
            org, author_key, "PUT", f"{path}/draft", json={"audiences": ["partners", "partners"]}
        )
    )
    assert draft["audiences"] == ["partners"] and draft["changedFields"] == ["audiences"]
    assert draft["title"] == "Partner pricing"  # the live value where the draft changes nothing
    assert (await data(await org.get(f"{path}/draft")))["audiences"] == ["partners"]
    assert (await data(await org.get(path)))["audiences"] == []
    # Approved as it is; any change of the audiences clears the approval.
    await data(await as_key(org, author_key, "POST", f"{path}/draft/review", json={}))
    approved = await data(await as_key(org, editor_key, "POST", f"{path}/draft/approve"))
    assert approved["reviewState"] == "approved" and approved["audiences"] == ["partners"]
    changed = await data(
        await as_key(org, author_key, "PUT", f"{path}/draft", json={"audiences": ["staff"]})
    )
    assert changed["reviewState"] == "pending" and changed["approvedVersion"] is None
    r = await as_key(org, author_key, "POST", f"{path}/draft/publish")
    assert r.status_code == 403 and await error(r) == "review_required"
    await data(await as_key(org, editor_key, "POST", f"{path}/draft/approve"))
    published = await data(await as_key(org, author_key, "POST", f"{path}/draft/publish"))
    assert published["audiences"] == ["staff"] and published["draft"] is None
    assert (await data(await org.get(path)))["audiences"] == ["staff"]
    # One revision, the usual events and audit entries, as any draft publish.
    revisions = (await (await org.get(f"{path}/revisions")).get_json())["data"]
    assert revisions[0]["changedFields"] == ["audiences"]
    assert revisions[0]["snapshot"]["audiences"] == []
    updated = [d for e, d in await events(engine, org) if e == "question.updated"]
    assert updated and updated[-1]["id"] == live["id"] and updated[-1]["audiences"] == ["staff"]
    audit = await relayed_audit(engine, org, limit=100, resourceId=live["id"])
    change = next(e for e in audit if e["action"] == "updated")
    assert change["before"] == {"audiences": []} and change["after"] == {"audiences": ["staff"]}
    assert any(e["action"] == "draft_published" for e in audit)
    # A publishable key's reader without the audience no longer finds it.
    assert await anonymous_status(org, path) == 404


async def test_a_draft_refuses_audiences_the_org_does_not_have(
    org_factory: OrgFactory,
) -> None:
    org = await audience_org(org_factory)
    q = await create(org, status="published")
    path = f"/questions/{q['id']}/draft"
    r = await org.request("PUT", path, json={"audiences": ["partners", "ghosts"]})
    assert r.status_code == 400 and await error(r) == "validation_failed"
    assert (await r.get_json())["error"]["details"][0]["field"] == "audiences[1]"
    for bad in ({"audiences": None}, {"audiences": ["Not A Slug!"]}, {"audiences": "partners"}):
        r = await org.request("PUT", path, json=bad)
        assert r.status_code == 400, bad
    assert (await org.get(path)).status_code == 404  # nothing was saved
    # Another organization's audience is no audience here.
    other = await other_org_with_audience(org_factory)
    r = await org.request("PUT", path, json={"audiences": [other]})
    assert r.status_code == 400
    assert (await r.get_json())["error"]["details"][0]["field"] == "audiences[0]"


async def other_org_with_audience(org_factory: OrgFactory) -> str:
    other = await org_factory(Plan.PRO)
    return str((await make(other, name="Outsiders"))["slug"])


async def test_a_draft_without_audiences_keeps_the_live_ones(org_factory: OrgFactory) -> None:
    org = await audience_org(org_factory)
    q = await create(org, status="published", audiences=["partners"])
    path = f"/questions/{q['id']}"
    draft = await data(await org.request("PUT", f"{path}/draft", json={"title": "New title"}))
    assert draft["audiences"] == ["partners"] and draft["changedFields"] == ["title"]
    published = await data(await org.post(f"{path}/draft/publish"))
    assert published["title"] == "New title" and published["audiences"] == ["partners"]
    # Emptying them in a draft opens the question to everyone once published.
    draft = await data(await org.request("PUT", f"{path}/draft", json={"audiences": []}))
    assert draft["audiences"] == [] and draft["changedFields"] == ["audiences"]
    assert await anonymous_status(org, path) == 404
    assert (await data(await org.post(f"{path}/draft/publish")))["audiences"] == []
    assert await anonymous_status(org, path) == 200


async def test_an_audience_a_draft_names_is_in_use(org_factory: OrgFactory) -> None:
    org = await audience_org(org_factory)
    q = await create(org, status="published")
    path = f"/questions/{q['id']}/draft"
    await data(await org.request("PUT", path, json={"audiences": ["partners"]}))
    # Publishing the draft must find the audience still there, with the same slug.
    r = await org.delete("/audiences/partners")
    assert r.status_code == 409 and await error(r) == "audience_in_use"
    r = await org.patch("/audiences/partners", json={"slug": "resellers"})
    assert r.status_code == 409 and await error(r) == "audience_in_use"
    assert (await org.delete(path)).status_code == 204
    assert (await org.delete("/audiences/partners")).status_code == 204


async def test_the_sweep_publishes_a_scheduled_drafts_audiences(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await audience_org(org_factory)
    q = await create(org, status="published")
    path = f"/questions/{q['id']}"
    await data(await org.request("PUT", f"{path}/draft", json={"audiences": ["staff"]}))
    at = utcnow() + timedelta(milliseconds=300)
    r = await org.post(f"{path}/draft/publish", json={"scheduledPublishAt": iso(at)})
    assert r.status_code == 202, await r.get_data()
    await asyncio.sleep(max(0.0, (at - utcnow()).total_seconds()) + 0.05)
    await publish_due_questions(engine)
    after = await data(await org.get(path))
    assert after["audiences"] == ["staff"] and after["draft"] is None
    assert await anonymous_status(org, path) == 404
