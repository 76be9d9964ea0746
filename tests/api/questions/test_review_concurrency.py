"""Four eyes under concurrent approve and edit (issue 30): an approval is of the version its
reviewer's request saw; an edit racing it either comes first (the approval is of the edited
version) or clears it. Whatever the order, only approved content is ever published."""

from __future__ import annotations

import asyncio

from billing.plans import Plan
from tests.api.keys.helpers import as_key
from tests.api.members.helpers import make_member, member_key
from tests.api.questions.helpers import create
from tests.conftest import OrgFactory

ROUNDS = 12


async def test_concurrent_approve_and_edit_never_publish_unapproved_content(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.PRO)
    author = await make_member(org, "author")
    author_key = await member_key(org, author, ["write"])
    editor = await make_member(org, "editor")
    editor_key = await member_key(org, editor, ["write", "review"])
    assert (await org.patch("/settings/workflow", json={"requireReview": True})).status_code == 200
    outcomes = set()
    for n in range(ROUNDS):
        q = await create(org, status="draft", title=f"Round {n}")
        path = f"/questions/{q['id']}/draft"
        r = await as_key(org, author_key, "PUT", path, json={"title": f"Seen {n}"})
        assert r.status_code == 200
        approve = as_key(org, editor_key, "POST", f"{path}/approve", json={})
        edit = as_key(org, author_key, "PUT", path, json={"title": f"Unseen {n}"})
        approved, edited = await asyncio.gather(approve, edit)
        assert approved.status_code == 200 and edited.status_code == 200
        draft = (await (await org.get(path, scope="read")).get_json())["data"]
        assert draft["title"] == f"Unseen {n}"  # the edit always lands
        r = await as_key(org, author_key, "POST", f"{path}/publish")
        live = (await (await org.get(f"/questions/{q['id']}", scope="read")).get_json())["data"]
        if draft["reviewState"] == "approved":
            # The approval came after the edit: it is of the edited version.
            assert draft["approvedVersion"] == draft["version"] == 2
            assert r.status_code == 200 and live["title"] == f"Unseen {n}"
            outcomes.add("approved-after-edit")
        else:
            # The edit came after: it cleared the approval; nothing is published.
            assert draft["reviewState"] == "pending" and draft["approvedVersion"] is None
            assert r.status_code == 403 and live["title"] == f"Round {n}"
            outcomes.add("edit-cleared-approval")
    assert outcomes  # each round ended in one of the two consistent states
