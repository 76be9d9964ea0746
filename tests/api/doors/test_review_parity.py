"""One door (issue 40): the review rules hold whatever the way in. Each test is a finding of
the issue, tried from outside, that passed before the rules moved into the commands: the same
forbidden act gets the same refusal through REST, an import and a translation write (the MCP
row is ``tests/api/mcp/test_mcp_doors.py``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.api.imports.helpers import enable_locales, run
from tests.api.keys.helpers import as_key
from tests.api.questions.helpers import create, error_code
from tests.api.questions.test_review import require_review, team
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def _json(r: Any) -> Any:
    return await r.get_json()


async def test_force_cannot_publish_text_no_reviewer_saw(org_factory: OrgFactory) -> None:
    """An author creates a question as a draft, saves a draft that only changes ``order``,
    gets it approved, PATCHes the unpublished question's answer, then publishes with
    ``force``: refused, and the approval is gone from the draft."""
    org = await org_factory(Plan.PRO)
    people = await team(org)
    _, author_key = people["author"]
    _, editor_key = people["editor"]
    assert (await require_review(org)).status_code == 200
    r = await as_key(
        org,
        author_key,
        "POST",
        "/questions",
        json={
            "title": "Refunds",
            "answer": "Within 30 days.",
            "categoryId": (await create(org, status="draft"))["categoryId"],
            "status": "draft",
        },
    )
    assert r.status_code == 201, await r.get_data()
    q = (await _json(r))["data"]
    path = f"/questions/{q['id']}"
    r = await as_key(org, author_key, "PUT", f"{path}/draft", json={"order": 5})
    assert r.status_code == 200, await r.get_data()
    r = await as_key(org, editor_key, "POST", f"{path}/draft/approve", json={})
    assert r.status_code == 200, await r.get_data()
    r = await as_key(org, author_key, "PATCH", path, json={"answer": "Never, sorry."})
    assert r.status_code == 200  # an unpublished question may change...
    r = await as_key(org, author_key, "GET", f"{path}/draft")
    assert (await _json(r))["data"]["reviewState"] == "pending"  # ...but its approval goes
    r = await as_key(org, author_key, "POST", f"{path}/draft/publish", json={"force": True})
    assert r.status_code == 403 and error_code(await _json(r)) == "review_required"
    live = await org.get(path, scope="read")
    assert (await _json(live))["data"]["status"] == "draft"
    # Approved again, as it now is: it publishes, with the text the reviewer saw.
    r = await as_key(org, editor_key, "POST", f"{path}/draft/approve", json={})
    assert r.status_code == 200
    r = await as_key(org, author_key, "POST", f"{path}/draft/publish", json={"force": True})
    assert r.status_code == 200, await r.get_data()
    data = (await _json(r))["data"]
    assert (data["status"], data["answer"], data["order"]) == ("published", "Never, sorry.", 5)


async def test_a_change_to_an_approved_drafts_question_clears_the_approval(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.PRO)
    people = await team(org)
    _, author_key = people["author"]
    _, editor_key = people["editor"]
    q = await create(org, status="published", title="Shipping")
    assert (await require_review(org)).status_code == 200
    path = f"/questions/{q['id']}"
    r = await as_key(org, author_key, "PUT", f"{path}/draft", json={"answer": "Two days."})
    assert r.status_code == 200
    r = await as_key(org, editor_key, "POST", f"{path}/draft/approve", json={})
    assert (await _json(r))["data"]["reviewState"] == "approved"
    # A change of the question that needs no review (unpublishing it) voids the approval.
    r = await as_key(org, author_key, "PATCH", path, json={"status": "draft"})
    assert r.status_code == 200, await r.get_data()
    r = await as_key(org, author_key, "GET", f"{path}/draft")
    draft = (await _json(r))["data"]
    assert (draft["reviewState"], draft["approvedVersion"], draft["decision"]) == (
        "pending",
        None,
        None,
    )
    r = await as_key(org, author_key, "POST", f"{path}/draft/publish", json={"force": True})
    assert r.status_code == 403 and error_code(await _json(r)) == "review_required"


async def test_translations_are_published_by_a_reviewer_who_did_not_write_them(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.PRO)
    await enable_locales(org, "fr")
    people = await team(org)
    _, author_key = people["author"]
    _, editor_key = people["editor"]
    _, editor2_key = people["editor2"]
    q = await create(org, status="published", title="Refunds")
    assert (await require_review(org)).status_code == 200
    path = f"/questions/{q['id']}/translations/fr"
    text = {"title": "Remboursements", "answer": "Sous 30 jours."}
    # Writing and publishing in one step skips review: refused, whoever writes.
    for key in (author_key, editor_key):
        r = await as_key(org, key, "PUT", path, json={**text, "status": "published"})
        assert r.status_code == 403 and error_code(await _json(r)) == "review_required"
    r = await as_key(org, editor_key, "PUT", path, json=text)  # a draft
    assert r.status_code in (200, 201), await r.get_data()
    assert (await _json(r))["data"]["status"] == "draft"
    r = await as_key(org, author_key, "PUT", path, json={**text, "status": "published"})
    assert r.status_code == 403 and error_code(await _json(r)) == "review_required"  # no scope
    r = await as_key(org, editor_key, "PUT", path, json={**text, "status": "published"})
    assert r.status_code == 403 and error_code(await _json(r)) == "self_approval"
    r = await org.get(path, scope="read")
    assert (await _json(r))["data"]["status"] == "draft"
    r = await as_key(org, editor2_key, "PUT", path, json={**text, "status": "published"})
    assert r.status_code == 200, await r.get_data()
    assert (await _json(r))["data"]["status"] == "published"
    # New text for the published translation goes back through review.
    changed = {"title": "Remboursements", "answer": "Sous 14 jours."}
    r = await as_key(org, editor2_key, "PUT", path, json=changed)
    assert r.status_code == 403 and error_code(await _json(r)) == "review_required"
    r = await org.get(path, scope="read")
    assert (await _json(r))["data"]["answer"] == "Sous 30 jours."


async def test_an_import_meets_the_same_review_rule_as_a_create(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    """The same forbidden act (publishing a new question unreviewed) by REST and by import:
    403 ``review_required``, and the import's item fails with that code; its drafts land."""
    org: OrgClient = await org_factory(Plan.PRO)
    assert (await require_review(org)).status_code == 200
    category = (await create(org, status="draft"))["categoryId"]
    r = await org.post(
        "/questions",
        json={"title": "Live", "answer": "x", "categoryId": category, "status": "published"},
        scope="write",
    )
    assert r.status_code == 403 and error_code(await _json(r)) == "review_required"
    body = b"title,answer,status\nLive one,Published text,published\nDraft one,Some text,draft\n"
    job = await run(engine, org, "csv", body)
    assert job["counts"]["failed"] == 1 and job["counts"]["created"] == 1, job
    (error,) = job["errors"]
    assert error["issue"].startswith("review_required"), error
    r = await org.get("/questions", query={"limit": 100}, scope="read")
    titles = {x["title"]: x["status"] for x in (await _json(r))["data"]}
    assert titles.get("Draft one") == "draft" and "Live one" not in titles
