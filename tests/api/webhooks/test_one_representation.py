"""One representation per resource (issue 40): the JSON a write answers, the ``data`` of its
webhook events (received by a real receiver, delivered by the real worker) and the snapshot of
its entry in the org's audit log are, after JSON parsing, what ``GET`` of the resource returns
right after (for a delete: right before). A question's ``draft`` summary included: null right
after create, the draft's summary on a PATCH of a question that has one (its approval cleared
by the change, as GET shows it), null after a draft publish."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.keys.helpers import as_key, make_key
from tests.api.members.helpers import make_member, member_key
from tests.api.questions.helpers import default_category
from tests.api.webhooks.conftest import create_webhook, wait_until
from tests.fixtures.orgs import OrgClient
from tests.fixtures.receiver import Endpoint

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]


async def get(org: OrgClient, path: str) -> Any:
    r = await org.get(path, scope="admin")
    assert r.status_code == 200, await r.get_data()
    return (await r.get_json())["data"]


async def write(org: OrgClient, method: str, path: str, status: int, **kw: Any) -> Any:
    r = await org.request(method, path, **kw)
    assert r.status_code == status, await r.get_data()
    return (await r.get_json())["data"]


async def event_data(endpoint: Endpoint, event: str, resource_id: str, nth: int = 0) -> Any:
    """The ``data`` of the ``nth`` delivery of ``event`` about ``resource_id``."""

    async def received() -> Any:
        found = [
            r.json["data"]
            for r in endpoint.unique().values()
            if r.json["event"] == event and r.json["data"].get("id") == resource_id
        ]
        return found[nth] if len(found) > nth else None

    return await wait_until(received)


async def audit_entry(org: OrgClient, resource: str, resource_id: str, action: str) -> Any:
    """The org audit log's entry (written by the worker's relay)."""

    async def listed() -> Any:
        query = {"resource": resource, "resourceId": resource_id, "action": action}
        r = await org.get("/audit", query=query, scope="admin")
        assert r.status_code == 200, await r.get_data()
        entries = (await r.get_json())["data"]
        return entries[0] if entries else None

    return await wait_until(listed)


async def test_a_question_is_one_shape_in_reads_writes_events_and_audit(
    org: OrgClient, endpoint: Endpoint
) -> None:
    await create_webhook(org, endpoint.url)
    body = {
        "title": "Shape of things",
        "answer": "One door.",
        "categoryId": await default_category(org),
        "status": "published",
    }
    created = await write(org, "POST", "/questions", 201, json=body, scope="write")
    path = f"/questions/{created['id']}"
    read = await get(org, path)
    assert read["draft"] is None
    assert created == read
    assert await event_data(endpoint, "question.created", read["id"]) == read
    assert await event_data(endpoint, "question.published", read["id"]) == read
    assert (await audit_entry(org, "question", read["id"], "created"))["after"] == read

    # A PATCH of a question with a draft under review, approved: the change clears the
    # approval, and the response and event show the draft as GET does right after.
    await write(org, "PUT", f"{path}/draft", 200, json={"answer": "Two doors."}, scope="write")
    await write(org, "POST", f"{path}/draft/review", 200, json={}, scope="write")
    editor = await make_member(org, "editor")
    editor_key = await member_key(org, editor, ["write", "review"])
    r = await as_key(org, editor_key, "POST", f"{path}/draft/approve", json={})
    assert r.status_code == 200, await r.get_data()
    assert (await get(org, path))["draft"]["reviewState"] == "approved"
    patched = await write(org, "PATCH", path, 200, json={"order": 7}, scope="write")
    read = await get(org, path)
    assert read["draft"]["reviewState"] == "pending"  # the approval went with the change
    assert patched == read
    assert await event_data(endpoint, "question.updated", read["id"]) == read

    # Publishing the draft (forced: the question changed since), the draft is gone.
    published = await write(
        org, "POST", f"{path}/draft/publish", 200, json={"force": True}, scope="write"
    )
    read = await get(org, path)
    assert read["draft"] is None and read["answer"] == "Two doors."
    assert published == read
    assert await event_data(endpoint, "question.updated", read["id"], nth=1) == read

    # Unpublished, then deleted with a draft: each event's data is the question as GET
    # showed it (for the delete: right before).
    unpublished = await write(org, "PATCH", path, 200, json={"status": "archived"}, scope="write")
    read = await get(org, path)
    assert unpublished == read
    assert await event_data(endpoint, "question.unpublished", read["id"]) == read
    await write(org, "PUT", f"{path}/draft", 200, json={"title": "Later"}, scope="write")
    before = await get(org, path)
    assert before["draft"] is not None
    r = await org.delete(path, scope="write")
    assert r.status_code == 204
    assert await event_data(endpoint, "question.deleted", before["id"]) == before
    assert (await audit_entry(org, "question", before["id"], "deleted"))["before"] == before


async def test_a_category_is_one_shape(org: OrgClient, endpoint: Endpoint) -> None:
    await create_webhook(org, endpoint.url)
    created = await write(org, "POST", "/categories", 201, json={"name": "Shapes"})
    path = f"/categories/{created['id']}"
    read = await get(org, path)
    assert created == read
    assert await event_data(endpoint, "category.created", read["id"]) == read
    assert (await audit_entry(org, "category", read["id"], "created"))["after"] == read
    patched = await write(org, "PATCH", path, 200, json={"description": "Round"})
    read = await get(org, path)
    assert patched == read
    assert await event_data(endpoint, "category.updated", read["id"]) == read


async def test_webhooks_members_keys_and_translations_are_one_shape(
    org: OrgClient, endpoint: Endpoint
) -> None:
    # Webhooks: the create's response adds the secret, shown once (SPEC); nothing else.
    created = await write(
        org, "POST", "/webhooks", 201, json={"url": endpoint.url, "events": ["question.created"]}
    )
    path = f"/webhooks/{created['id']}"
    read = await get(org, path)
    assert {k: v for k, v in created.items() if k != "secret"} == read
    assert (await audit_entry(org, "webhook", read["id"], "created"))["after"] == read
    patched = await write(org, "PATCH", path, 200, json={"description": "ops"})
    assert patched == await get(org, path)

    # Members.
    member = await make_member(org, "author")
    path = f"/members/{member['id']}"
    read = await get(org, path)
    assert member == read
    assert (await audit_entry(org, "member", read["id"], "created"))["after"] == read
    patched = await write(org, "PATCH", path, 200, json={"role": "editor"})
    assert patched == await get(org, path)

    # Keys: the create's response adds the key itself, shown once; the list shows the rest.
    key = await make_key(org, name="shape", scopes=["read"])
    listed = next(k for k in await get(org, "/keys") if k["fingerprint"] == key["fingerprint"])
    assert {k: v for k, v in key.items() if k != "key"} == listed
    assert (await audit_entry(org, "key", listed["fingerprint"], "created"))["after"] == listed

    # Translations.
    await write(org, "PATCH", "/settings", 200, json={"locales": ["en", "fr"]})
    question = await write(
        org,
        "POST",
        "/questions",
        201,
        json={
            "title": "Forme",
            "answer": "Une porte.",
            "categoryId": await default_category(org),
            "status": "draft",
        },
        scope="write",
    )
    path = f"/questions/{question['id']}/translations/fr"
    put = await write(
        org,
        "PUT",
        path,
        201,
        json={"title": "Forme", "answer": "Une porte.", "status": "draft"},
        scope="write",
    )
    read = await get(org, path)
    assert put == read
    entry = await audit_entry(org, "question", question["id"], "translation_updated")
    assert entry["after"] == read

    # Settings: the PATCH answers what GET shows.
    patched = await write(org, "PATCH", "/settings", 200, json={"locales": ["en", "fr", "de"]})
    assert patched == await get(org, "/settings")
