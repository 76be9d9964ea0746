"""An empty body where a JSON object is expected is 400 ``invalid_json`` (SPEC: "Body is not
valid JSON"), on every route that takes a body; routes that take none work without one."""

from __future__ import annotations

from typing import Any

import pytest
from quart import Quart
from quart_schema.validation import QUART_SCHEMA_REQUEST_ATTRIBUTE

from tests.fixtures.orgs import OrgClient


async def _resources(org: OrgClient) -> dict[str, str]:
    r = await org.post("/categories", json={"name": "Empty bodies"})
    assert r.status_code == 201, await r.get_data()
    category = (await r.get_json())["data"]["id"]
    r = await org.post(
        "/questions",
        json={"title": "Why?", "answer": "Because.", "categoryId": category, "status": "draft"},
    )
    assert r.status_code == 201, await r.get_data()
    question = (await r.get_json())["data"]["id"]
    r = await org.post(
        "/webhooks", json={"url": "https://127.0.0.1:9/hook", "events": ["category.created"]}
    )
    assert r.status_code == 201, await r.get_data()
    webhook = (await r.get_json())["data"]["id"]
    r = await org.post(
        "/members", json={"email": "ann@example.com", "name": "Ann", "role": "editor"}
    )
    assert r.status_code == 201, await r.get_data()
    member = (await r.get_json())["data"]["id"]
    r = await org.post("/audiences", json={"name": "Partners"})
    assert r.status_code == 201, await r.get_data()
    audience = (await r.get_json())["data"]["id"]
    return {
        "category": category,
        "question": question,
        "webhook": webhook,
        "member": member,
        "audience": audience,
    }


BODY_ROUTES = [
    ("POST", "/categories"),
    ("PATCH", "/categories/{category}"),
    ("POST", "/categories/merge"),
    ("POST", "/categories/reorder"),
    ("POST", "/questions"),
    ("PATCH", "/questions/{question}"),
    ("POST", "/questions/reorder"),
    ("POST", "/webhooks"),
    ("PATCH", "/webhooks/{webhook}"),
    ("POST", "/webhooks/{webhook}/recover"),
    ("POST", "/billing/checkout"),
    ("PATCH", "/settings"),
    ("PUT", "/questions/{question}/translations/fr"),
    ("PUT", "/categories/{category}/translations/fr"),
    ("POST", "/keys"),
    ("POST", "/members"),
    ("PATCH", "/members/{member}"),
    ("PATCH", "/settings/workflow"),
    ("PUT", "/synonyms"),
    ("PUT", "/questions/{question}/draft"),
    # The support lexicon's switches (issue 38) and a reader's vote (issue 41: the widget).
    ("PUT", "/synonyms/lexicon"),
    ("POST", "/questions/{question}/votes"),
    # Audiences (issue 39).
    ("POST", "/audiences"),
    ("PATCH", "/audiences/{audience}"),
    ("PUT", "/settings/readers"),
]
# Routes whose body is optional (issue 30: a comment, reviewers, a publish time): an empty
# body is no body, not invalid JSON (tests/api/questions/test_drafts.py, test_review.py).
OPTIONAL_BODY_ROUTES = [
    ("POST", "/questions/<ref>/draft/publish"),
    ("POST", "/questions/<ref>/draft/review"),
    ("POST", "/questions/<ref>/draft/approve"),
    ("POST", "/questions/<ref>/draft/reject"),
]


def test_the_list_names_every_route_that_takes_a_body(app: Quart) -> None:
    """A new body route joins ``BODY_ROUTES`` (and so the empty-body check). Stripe's webhook
    reads its raw body for the signature (an empty one is ``invalid_signature``)."""
    declared = set()
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if rule.rule == "/billing/stripe/webhook":
            continue
        if hasattr(view, QUART_SCHEMA_REQUEST_ATTRIBUTE):
            path = rule.rule.removeprefix("/api/v1/<org>")
            for method in (rule.methods or set()) - {"OPTIONS", "HEAD"}:
                declared.add((method, path))
    listed = {
        (method, template.replace("{category}", "<ref>").replace("{question}", "<ref>"))
        for method, template in BODY_ROUTES
    }
    listed = {
        (
            m,
            p.replace("{webhook}", "<webhook_id>")
            .replace("{member}", "<member_id>")
            .replace("{audience}", "<ref>")
            .replace("/translations/fr", "/translations/<locale>"),
        )
        for m, p in listed
    }
    assert declared == listed | set(OPTIONAL_BODY_ROUTES)


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/x-www-form-urlencoded", None]
)
async def test_an_empty_body_is_invalid_json_on_every_body_route(
    org: OrgClient, content_type: str | None
) -> None:
    ids = await _resources(org)
    headers = {"Content-Type": content_type} if content_type else {}
    for method, template in BODY_ROUTES:
        path = template.format(**ids)
        r = await org.request(method, path, data=b"", headers=headers)
        assert r.status_code == 400, (method, path, r.status_code)
        error = (await r.get_json())["error"]
        assert error["code"] == "invalid_json", (method, path, error)
        assert set(error) == {"code", "message", "details"}


async def test_whitespace_only_is_invalid_json_too(org: OrgClient) -> None:
    r = await org.post("/categories", data=b"  \n", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert (await r.get_json())["error"]["code"] == "invalid_json"


async def test_a_json_value_that_is_not_an_object_stays_validation_failed(org: OrgClient) -> None:
    """CONTRACT: a body that is JSON but not an object (array, string, null) is
    ``validation_failed`` (webhooks: ``validation_error``); only a body that is not JSON at
    all is ``invalid_json``."""
    for body in (b"[]", b'"x"', b"null"):
        r = await org.post("/categories", data=body, headers={"Content-Type": "application/json"})
        assert (r.status_code, (await r.get_json())["error"]["code"]) == (400, "validation_failed")
        r = await org.post("/webhooks", data=body, headers={"Content-Type": "application/json"})
        assert (r.status_code, (await r.get_json())["error"]["code"]) == (400, "validation_error")


async def test_routes_without_a_body_work_without_one(org: OrgClient) -> None:
    ids = await _resources(org)
    r = await org.post(f"/webhooks/{ids['webhook']}/test", data=b"")
    assert r.status_code == 202, await r.get_data()
    r = await org.patch(f"/questions/{ids['question']}", json={"title": "Why not?"})
    assert r.status_code == 200, await r.get_data()
    r = await org.get(f"/questions/{ids['question']}/revisions")
    revision = (await r.get_json())["data"][0]["id"]
    r = await org.post(f"/questions/{ids['question']}/revisions/{revision}/restore", data=b"")
    assert r.status_code == 200, await r.get_data()
    r = await org.post(
        f"/webhooks/{ids['webhook']}/deliveries/dlv_01JD0000000000000000000000/replay"
    )
    assert r.status_code == 404, await r.get_data()
    assert (await r.get_json())["error"]["code"] == "not_found"


async def test_a_body_route_still_reads_a_body(org: OrgClient) -> None:
    body: Any = {"name": "Read fine"}
    r = await org.post("/categories", json=body)
    assert r.status_code == 201
