"""A reviewer reads what it reviews (issue 41): a member's key holding only ``review`` reads the
drafts it must decide on, the questions they belong to, their diffs and the review queue
(``review`` includes ``read``, decided once in ``tenancy.keys.grants``), and still writes
nothing."""

from __future__ import annotations

from billing.plans import Plan
from tests.api.keys.helpers import as_key
from tests.api.members.helpers import make_member, member_key
from tests.api.questions.helpers import create, error_code
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def test_a_review_only_key_reads_the_drafts_it_approves(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.PRO)
    live = await create(org, status="published", title="Live title")
    r = await org.patch(f"/questions/{live['id']}", json={"answer": "Use the sign-in page."})
    assert r.status_code == 200  # a revision to compare the draft with
    r = await org.patch("/settings/workflow", json={"requireReview": True})
    assert r.status_code == 200
    author = await make_member(org, "author")
    author_key = await member_key(org, author, ["write"])
    reviewer = await make_member(org, "editor")
    review_key = await member_key(org, reviewer, ["review"])
    proposed = await create(org, status="draft", title="A new question")
    r = await as_key(
        org, author_key, "PUT", f"/questions/{live['id']}/draft", json={"title": "Better title"}
    )
    assert r.status_code == 200
    r = await as_key(
        org,
        author_key,
        "POST",
        f"/questions/{live['id']}/draft/review",
        json={"reviewerIds": [reviewer["id"]]},
    )
    assert r.status_code == 200

    # The queue, the draft, its question (by id and by slug), the list, a diff.
    r = await as_key(org, review_key, "GET", "/reviews", query_string={"state": "pending"})
    assert r.status_code == 200, await r.get_json()
    assert [d["questionId"] for d in (await r.get_json())["data"]] == [live["id"]]
    r = await as_key(org, review_key, "GET", f"/questions/{live['id']}/draft")
    assert r.status_code == 200, await r.get_json()
    draft = (await r.get_json())["data"]
    assert draft["title"] == "Better title" and draft["changedFields"] == ["title"]
    r = await as_key(org, review_key, "GET", f"/questions/{live['slug']}")
    assert r.status_code == 200
    question = (await r.get_json())["data"]
    assert question["title"] == "Live title" and question["draft"]["reviewState"] == "pending"
    r = await as_key(org, review_key, "GET", f"/questions/{proposed['id']}")
    assert r.status_code == 200 and (await r.get_json())["data"]["status"] == "draft"
    r = await as_key(org, review_key, "GET", "/questions", query_string={"status": "draft"})
    assert r.status_code == 200
    assert [q["id"] for q in (await r.get_json())["data"]] == [proposed["id"]]
    r = await as_key(org, review_key, "GET", f"/questions/{live['id']}/revisions")
    assert r.status_code == 200
    revision = (await r.get_json())["data"][0]
    r = await as_key(
        org,
        review_key,
        "GET",
        f"/questions/{live['id']}/revisions/{revision['id']}/diff",
        query_string={"against": "draft"},
    )
    assert r.status_code == 200, await r.get_json()

    # It decides...
    r = await as_key(
        org,
        review_key,
        "POST",
        f"/questions/{live['id']}/draft/approve",
        json={"version": draft["version"]},
    )
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["data"]["reviewState"] == "approved"
    # ...and writes nothing.
    for method, path, body in (
        ("PUT", f"/questions/{live['id']}/draft", {"title": "Reviewer's own"}),
        ("POST", f"/questions/{live['id']}/draft/publish", None),
        ("PATCH", f"/questions/{proposed['id']}", {"title": "Renamed"}),
        ("POST", "/categories", {"name": "New"}),
    ):
        r = await as_key(org, review_key, method, path, json=body)
        assert r.status_code == 403, (method, path)
        assert error_code(await r.get_json()) == "insufficient_scope"
    r = await as_key(org, author_key, "POST", f"/questions/{live['id']}/draft/publish")
    assert r.status_code == 200 and (await r.get_json())["data"]["title"] == "Better title"


async def test_a_review_only_key_reads_no_other_org(
    org_factory: OrgFactory, other_org: OrgClient
) -> None:
    org = await org_factory(Plan.PRO)
    reviewer = await make_member(org, "editor")
    review_key = await member_key(org, reviewer, ["review"])
    foreign = await create(other_org, status="draft", title="Elsewhere")
    r = await org.client.get(
        f"/api/v1/{other_org.slug}/questions/{foreign['id']}",
        headers={"Authorization": f"Bearer {review_key}"},
    )
    assert r.status_code == 404 and error_code(await r.get_json()) == "org_not_found"
    r = await as_key(org, review_key, "GET", f"/questions/{foreign['id']}")
    assert r.status_code == 404
