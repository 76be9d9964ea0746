"""The Webhooks API: create, list, get, PATCH, delete, scopes, plan gate, validation, tenancy."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Webhook
from api.webhooks.signing import decrypt_secret
from billing.plans import Plan
from tenancy.db import tenant_session
from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.receiver import Endpoint

SECRET_RE = re.compile(r"^whsec_[A-Za-z0-9_-]{43}=$")
ID_RE = re.compile(r"^wh_[0-9A-Z]{26}$")
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


async def error_of(response) -> tuple[int, str]:
    return response.status_code, (await response.get_json())["error"]["code"]


async def test_create_returns_the_secret_once(org, endpoint: Endpoint, engine: AsyncEngine):
    r = await org.post(
        "/webhooks",
        json={"url": endpoint.url, "events": ["category.created"], "description": "ops"},
    )
    assert r.status_code == 201, await r.get_data()
    created = (await r.get_json())["data"]
    assert ID_RE.match(created["id"])
    assert SECRET_RE.match(created["secret"])
    assert len(base64.urlsafe_b64decode(created["secret"][6:])) == 32
    assert created["active"] is True and created["deliveryCount"] == 0
    assert created["events"] == ["category.created"]
    assert created["description"] == "ops"
    assert TS_RE.match(created["createdAt"]) and TS_RE.match(created["updatedAt"])

    got = (await (await org.get(f"/webhooks/{created['id']}", scope="read")).get_json())["data"]
    assert "secret" not in got
    assert got == {k: v for k, v in created.items() if k != "secret"}
    listed = (await (await org.get("/webhooks", scope="read")).get_json())["data"]
    assert [w["id"] for w in listed] == [created["id"]] and "secret" not in listed[0]

    # Stored encrypted with FAQ_SECRET_KEY, never in clear.
    async with tenant_session(engine, org.info.schema_name) as session:
        stored = (
            await session.execute(
                select(Webhook.secret_ciphertext).where(Webhook.id == created["id"])
            )
        ).scalar_one()
    assert created["secret"] not in stored
    assert decrypt_secret(stored) == created["secret"]


async def test_secrets_differ(org, endpoint: Endpoint):
    a = await create_webhook(org, endpoint.url)
    b = await create_webhook(org, endpoint.url)
    assert a["secret"] != b["secret"]


async def test_description_absent_is_null(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url)
    assert created["description"] is None


@pytest.mark.parametrize("scope", ["read", "write"])
async def test_create_needs_admin(org, endpoint: Endpoint, scope: str):
    r = await org.post(
        "/webhooks", json={"url": endpoint.url, "events": ["category.created"]}, scope=scope
    )
    assert await error_of(r) == (403, "insufficient_scope")


async def test_create_needs_starter(org_factory, endpoint: Endpoint):
    free = await org_factory(Plan.FREE)
    r = await free.post("/webhooks", json={"url": endpoint.url, "events": ["category.created"]})
    assert await error_of(r) == (403, "plan_required")


async def test_webhooks_survive_a_downgrade(org_factory, endpoint: Endpoint, engine: AsyncEngine):
    from tenancy.orgs import set_plan

    org = await org_factory(Plan.STARTER)
    created = await create_webhook(org, endpoint.url)
    await set_plan(engine, org.slug, Plan.FREE, actor={"type": "ops", "id": "test"})
    r = await org.patch(f"/webhooks/{created['id']}", json={"description": "still mine"})
    assert r.status_code == 200, await r.get_data()
    assert (await org.get(f"/webhooks/{created['id']}")).status_code == 200
    r = await org.post("/webhooks", json={"url": endpoint.url, "events": ["category.created"]})
    assert await error_of(r) == (403, "plan_required")


@pytest.mark.parametrize(
    "body",
    [
        {"events": ["category.created"]},
        {"url": "https://example.com/h"},
        {"url": "https://example.com/h", "events": []},
        {"url": "https://example.com/h", "events": ["category.exploded"]},
        {"url": "https://example.com/h", "events": ["ping"]},
        {"url": "https://example.com/h", "events": "category.created"},
        {"url": "https://example.com/h", "events": ["category.created"], "description": "x" * 501},
        {"url": "https://example.com/h", "events": ["category.created"], "active": False},
        {"url": "https://example.com/h", "events": ["category.created"], "secret": "whsec_x"},
        {"url": "https://example.com/h", "events": ["category.created"], "deliveryCount": 3},
        {"url": 5, "events": ["category.created"]},
        {"url": "https://" + "a" * 2048 + ".com/", "events": ["category.created"]},
        ["not", "an", "object"],
        "a string",
    ],
)
async def test_create_body_errors_are_validation_error(org, body):
    r = await org.post("/webhooks", json=body)
    assert await error_of(r) == (400, "validation_error")


async def test_description_of_500_is_accepted(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url, description="d" * 500)
    assert created["description"] == "d" * 500


async def test_invalid_json_body(org):
    r = await org.post("/webhooks", data=b"{nope", headers={"Content-Type": "application/json"})
    assert await error_of(r) == (400, "invalid_json")


async def test_duplicate_events_are_kept_once(org, endpoint: Endpoint):
    created = await create_webhook(
        org, endpoint.url, events=["category.created", "category.created", "question.created"]
    )
    assert created["events"] == ["category.created", "question.created"]


async def test_patch_each_field(org, endpoint: Endpoint, receiver):
    created = await create_webhook(org, endpoint.url, events=["category.created"])
    other = receiver.endpoint()
    path = f"/webhooks/{created['id']}"
    changes = {
        "url": other.url,
        "events": ["question.deleted", "category.deleted"],
        "active": False,
        "description": "new",
    }
    for field, value in changes.items():
        r = await org.patch(path, json={field: value})
        assert r.status_code == 200, await r.get_data()
        assert (await r.get_json())["data"][field] == value
    r = await org.patch(path, json={"description": None})
    body = (await r.get_json())["data"]
    assert body["description"] is None and "secret" not in body
    assert body["updatedAt"] >= created["updatedAt"]
    got = (await (await org.get(path)).get_json())["data"]
    assert got == body


@pytest.mark.parametrize(
    "body",
    [
        {"url": None},
        {"events": None},
        {"active": None},
        {"events": []},
        {"events": ["nope.nope"]},
        {"url": "http://example.com/"},
        {"url": "https://169.254.169.254/latest/meta-data"},
        {"active": "yes"},
        {"description": "x" * 501},
        {"deliveryCount": 0},
        {"secret": "whsec_abc"},
        {"id": "wh_01JD0000000000000000000000"},
        [],
    ],
)
async def test_patch_body_errors_are_validation_error(org, endpoint: Endpoint, body):
    created = await create_webhook(org, endpoint.url)
    r = await org.patch(f"/webhooks/{created['id']}", json=body)
    assert await error_of(r) == (400, "validation_error")


@pytest.mark.parametrize("scope", ["read", "write"])
async def test_patch_and_delete_need_admin(org, endpoint: Endpoint, scope: str):
    created = await create_webhook(org, endpoint.url)
    r = await org.patch(f"/webhooks/{created['id']}", json={"active": False}, scope=scope)
    assert await error_of(r) == (403, "insufficient_scope")
    r = await org.delete(f"/webhooks/{created['id']}", scope=scope)
    assert await error_of(r) == (403, "insufficient_scope")


async def test_reads_need_read(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url)
    for path in (
        "/webhooks",
        f"/webhooks/{created['id']}",
        f"/webhooks/{created['id']}/deliveries",
    ):
        assert (await org.get(path, scope="read")).status_code == 200
        r = await org.get(path, scope=None)
        assert await error_of(r) == (401, "unauthorized")


@pytest.mark.parametrize("scope", ["read", "write"])
async def test_test_replay_recover_need_admin(org, endpoint: Endpoint, scope: str):
    created = await create_webhook(org, endpoint.url)
    wid = created["id"]
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    for path, body in (
        (f"/webhooks/{wid}/test", None),
        (f"/webhooks/{wid}/deliveries/dlv_01JD0000000000000000000000/replay", None),
        (f"/webhooks/{wid}/recover", {"since": since}),
    ):
        r = await org.post(path, json=body, scope=scope)
        assert await error_of(r) == (403, "insufficient_scope"), path


async def test_delete_is_soft_and_final(org, endpoint: Endpoint, engine: AsyncEngine):
    created = await create_webhook(org, endpoint.url)
    path = f"/webhooks/{created['id']}"
    r = await org.delete(path)
    assert r.status_code == 204 and await r.get_data() == b""
    for method in ("GET", "PATCH", "DELETE"):
        r = await org.request(method, path, json={"active": True} if method == "PATCH" else None)
        assert await error_of(r) == (404, "not_found")
    assert (await (await org.get("/webhooks")).get_json())["data"] == []
    r = await org.post(f"{path}/test")
    assert await error_of(r) == (404, "not_found")
    async with tenant_session(engine, org.info.schema_name) as session:
        row = (
            await session.execute(select(Webhook).where(Webhook.id == created["id"]))
        ).scalar_one()
    assert row.deleted_at is not None and row.active is False


@pytest.mark.parametrize(
    "ref", ["wh_01JD0000000000000000000000", "nope", "cat_01JD0000000000000000000000"]
)
async def test_unknown_webhook_is_not_found(org, ref: str):
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    for method, path, body in (
        ("GET", f"/webhooks/{ref}", None),
        ("PATCH", f"/webhooks/{ref}", {"active": False}),
        ("DELETE", f"/webhooks/{ref}", None),
        ("POST", f"/webhooks/{ref}/test", None),
        ("GET", f"/webhooks/{ref}/deliveries", None),
        ("POST", f"/webhooks/{ref}/deliveries/dlv_01JD0000000000000000000000/replay", None),
        ("POST", f"/webhooks/{ref}/recover", {"since": since}),
    ):
        r = await org.request(method, path, json=body)
        assert await error_of(r) == (404, "not_found"), (method, path)


async def test_unknown_delivery_on_replay_is_not_found(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url)
    for ref in ("dlv_01JD0000000000000000000000", "nope"):
        r = await org.post(f"/webhooks/{created['id']}/deliveries/{ref}/replay")
        assert await error_of(r) == (404, "not_found")


async def test_every_endpoint_refuses_another_orgs_webhook(org, other_org, endpoint: Endpoint):
    theirs = await create_webhook(other_org, endpoint.url)
    r = await other_org.post(f"/webhooks/{theirs['id']}/test")
    assert r.status_code == 202
    their_delivery = (await r.get_json())["data"]["id"]
    wid = theirs["id"]
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    for method, path, body in (
        ("GET", f"/webhooks/{wid}", None),
        ("PATCH", f"/webhooks/{wid}", {"active": False}),
        ("DELETE", f"/webhooks/{wid}", None),
        ("POST", f"/webhooks/{wid}/test", None),
        ("GET", f"/webhooks/{wid}/deliveries", None),
        ("GET", f"/webhooks/{wid}/deliveries/{their_delivery}", None),
        ("POST", f"/webhooks/{wid}/deliveries/{their_delivery}/replay", None),
        ("POST", f"/webhooks/{wid}/recover", {"since": since}),
    ):
        r = await org.request(method, path, json=body)
        assert await error_of(r) == (404, "not_found"), (method, path)
    # Our own webhook cannot reach their delivery either.
    ours = await create_webhook(org, endpoint.url)
    r = await org.post(f"/webhooks/{ours['id']}/deliveries/{their_delivery}/replay")
    assert await error_of(r) == (404, "not_found")
    assert [w["id"] for w in (await (await org.get("/webhooks")).get_json())["data"]] == [
        ours["id"]
    ]
    # Their key on our org slug: org_not_found.
    r = await org.client.get(f"/api/v1/{org.slug}/webhooks", headers=other_org.headers("admin"))
    assert await error_of(r) == (404, "org_not_found")
    # Theirs is untouched.
    got = await other_org.get(f"/webhooks/{wid}")
    assert (await got.get_json())["data"]["active"] is True


async def test_list_pagination(org, endpoint: Endpoint):
    ids = [(await create_webhook(org, endpoint.url))["id"] for _ in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        body = await (await org.get("/webhooks", query=query)).get_json()
        seen += [w["id"] for w in body["data"]]
        meta = body["meta"]["pagination"]
        assert meta["limit"] == 2
        if not meta["hasMore"]:
            assert meta["cursor"] is None
            break
        cursor = meta["cursor"]
    assert seen == sorted(ids)
    default = await (await org.get("/webhooks")).get_json()
    assert default["meta"]["pagination"]["limit"] == 20


@pytest.mark.parametrize(
    "query", [{"limit": 0}, {"limit": 101}, {"limit": "x"}, {"cursor": "forged"}]
)
async def test_list_limit_and_cursor_errors(org, endpoint: Endpoint, query):
    created = await create_webhook(org, endpoint.url)
    for path in ("/webhooks", f"/webhooks/{created['id']}/deliveries"):
        r = await org.get(path, query=query)
        assert await error_of(r) == (400, "validation_error"), path


async def test_cursor_of_another_list_is_refused(org, endpoint: Endpoint):
    for _ in range(2):
        await create_webhook(org, endpoint.url)
    cursor = (await (await org.get("/webhooks", query={"limit": 1})).get_json())["meta"][
        "pagination"
    ]["cursor"]
    created = await create_webhook(org, endpoint.url)
    r = await org.get(f"/webhooks/{created['id']}/deliveries", query={"cursor": cursor})
    assert await error_of(r) == (400, "validation_error")


async def test_every_edit_of_a_cursors_last_character_is_refused(org, endpoint: Endpoint):
    # The last base64 character carries spare bits a decoder ignores: editing only those must
    # still be refused, not decode to the same signature.
    for _ in range(2):
        await create_webhook(org, endpoint.url)
    cursor = (await (await org.get("/webhooks", query={"limit": 1})).get_json())["meta"][
        "pagination"
    ]["cursor"]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for ch in alphabet.replace(cursor[-1], ""):
        r = await org.get("/webhooks", query={"limit": 1, "cursor": cursor[:-1] + ch})
        assert await error_of(r) == (400, "validation_error"), ch


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"since": "2026-11-20T10:00:00"},
        {"since": 1700000000},
        {"since": "yesterday"},
        {"since": "0001-01-01T00:00:00+01:00"},  # before year 1 in UTC
        {"since": "9999-12-31T23:59:59-01:00"},  # after year 9999 in UTC
        {"since": "2026-11-20T10:00:00Z", "extra": 1},
    ],
)
async def test_recover_body_errors(org, endpoint: Endpoint, body):
    created = await create_webhook(org, endpoint.url)
    r = await org.post(f"/webhooks/{created['id']}/recover", json=body)
    assert await error_of(r) == (400, "validation_error")


async def test_recover_at_most_14_days_back(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url)
    too_old = (datetime.now(UTC) - timedelta(days=14, minutes=1)).isoformat()
    r = await org.post(f"/webhooks/{created['id']}/recover", json={"since": too_old})
    assert await error_of(r) == (400, "validation_error")
    ok = (datetime.now(UTC) - timedelta(days=13, hours=23)).isoformat()
    r = await org.post(f"/webhooks/{created['id']}/recover", json={"since": ok})
    assert r.status_code == 202
    assert await r.get_json() == {"data": {"queued": 0}}


async def test_inactive_webhook_refuses_test_and_replay(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url)
    r = await org.post(f"/webhooks/{created['id']}/test")
    delivery_id = (await r.get_json())["data"]["id"]
    await org.patch(f"/webhooks/{created['id']}", json={"active": False})
    r = await org.post(f"/webhooks/{created['id']}/test")
    assert await error_of(r) == (409, "webhook_inactive")
    r = await org.post(f"/webhooks/{created['id']}/deliveries/{delivery_id}/replay")
    assert await error_of(r) == (409, "webhook_inactive")


async def test_openapi_documents_the_webhook_routes(client):
    doc = await (await client.get("/openapi.json")).get_json()
    paths = {p for p in doc["paths"] if "/webhooks" in p}
    assert len(paths) >= 6, paths


async def test_recover_without_a_body(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url)
    r = await org.post(f"/webhooks/{created['id']}/recover")
    assert await error_of(r) == (400, "invalid_json")


async def test_wrong_method_on_an_operation(org, endpoint: Endpoint):
    created = await create_webhook(org, endpoint.url)
    r = await org.get(f"/webhooks/{created['id']}/test")
    assert await error_of(r) == (405, "method_not_allowed")
