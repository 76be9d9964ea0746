"""Word-level diffs of revisions (issue 30): against live, the draft, another revision."""

from __future__ import annotations

from typing import Any

from api.questions.diff import word_diff
from tests.api.questions.helpers import create, error_code
from tests.fixtures.orgs import OrgClient


def test_word_diff_marks_whole_words() -> None:
    assert word_diff("Reset your password now.", "Reset the password today.") == [
        {"op": "equal", "text": "Reset "},
        {"op": "delete", "text": "your"},
        {"op": "insert", "text": "the"},
        {"op": "equal", "text": " password "},
        {"op": "delete", "text": "now"},
        {"op": "insert", "text": "today"},
        {"op": "equal", "text": "."},
    ]
    assert word_diff("same", "same") == [{"op": "equal", "text": "same"}]
    assert word_diff("", "new words") == [{"op": "insert", "text": "new words"}]


def rebuilt(ops: list[dict[str, str]], side: str) -> str:
    skip = "insert" if side == "before" else "delete"
    return "".join(o["text"] for o in ops if o["op"] != skip)


async def revisions(org: OrgClient, qid: str) -> list[dict[str, Any]]:
    r = await org.get(f"/questions/{qid}/revisions", scope="read")
    data: list[dict[str, Any]] = (await r.get_json())["data"]
    return data


async def test_diff_against_live_draft_and_another_revision(
    org: OrgClient, other_org: OrgClient
) -> None:
    q = await create(org, title="Old title", answer="The first answer text.")
    await org.patch(f"/questions/{q['id']}", json={"title": "Middle title"}, scope="write")
    await org.patch(
        f"/questions/{q['id']}", json={"answer": "The second answer text."}, scope="write"
    )
    newest, oldest = await revisions(org, q["id"])  # newest first
    r = await org.get(f"/questions/{q['id']}/revisions/{oldest['id']}/diff", scope="read")
    assert r.status_code == 200, await r.get_json()
    diff = (await r.get_json())["data"]
    assert diff["revisionId"] == oldest["id"] and diff["against"] == "live"
    assert rebuilt(diff["title"], "before") == "Old title"
    assert rebuilt(diff["title"], "after") == "Middle title"
    assert {"op": "delete", "text": "first"} in diff["answer"]
    assert {"op": "insert", "text": "second"} in diff["answer"]
    r = await org.get(
        f"/questions/{q['id']}/revisions/{oldest['id']}/diff",
        query={"against": newest["id"]},
        scope="read",
    )
    between = (await r.get_json())["data"]
    assert rebuilt(between["title"], "after") == "Middle title"
    assert between["answer"] == [{"op": "equal", "text": "The first answer text."}]
    r = await org.get(
        f"/questions/{q['id']}/revisions/{newest['id']}/diff",
        query={"against": "draft"},
        scope="read",
    )
    assert r.status_code == 404 and error_code(await r.get_json()) == "draft_not_found"
    await org.request("PUT", f"/questions/{q['id']}/draft", json={"title": "Draft title"})
    r = await org.get(
        f"/questions/{q['id']}/revisions/{newest['id']}/diff",
        query={"against": "draft"},
        scope="read",
    )
    assert rebuilt((await r.get_json())["data"]["title"], "after") == "Draft title"
    # Unknown or foreign revisions and questions.
    other = await create(org, title="Another")
    await org.patch(f"/questions/{other['id']}", json={"title": "Another one"}, scope="write")
    foreign = (await revisions(org, other["id"]))[0]
    for path, query in (
        (f"/questions/{q['id']}/revisions/{foreign['id']}/diff", None),
        (f"/questions/{q['id']}/revisions/{oldest['id']}/diff", {"against": foreign["id"]}),
        (f"/questions/{q['id']}/revisions/rev_nope/diff", None),
    ):
        r = await org.get(path, query=query, scope="read")
        assert r.status_code == 404 and error_code(await r.get_json()) == "revision_not_found"
    r = await other_org.get(f"/questions/{q['id']}/revisions/{oldest['id']}/diff")
    assert r.status_code == 404 and error_code(await r.get_json()) == "question_not_found"
    r = await org.get(
        f"/questions/{q['id']}/revisions/{oldest['id']}/diff",
        query={"against": "x" * 41},
        scope="read",
    )
    assert r.status_code == 400
