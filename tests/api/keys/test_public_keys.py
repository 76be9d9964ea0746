"""Publishable keys (scope ``public``): published content only, every other route 403, the
response cache kept apart by audience, and a budget per client address."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.keys import grants
from tenancy.settings import get_settings
from tests.api.keys.helpers import as_key, make_public_key
from tests.fixtures.orgs import OrgClient, make_org


def test_public_includes_nothing_and_nothing_includes_it() -> None:
    for scope in ("read", "write", "admin"):
        assert not grants(["public"], scope)
        assert not grants([scope], "public")
    assert grants(["public"], "public")
    assert grants(["admin"], "read")


async def _content(org: OrgClient) -> dict[str, Any]:
    r = await org.post("/categories", json={"name": "Shipping"})
    assert r.status_code == 201
    category = (await r.get_json())["data"]["id"]
    ids: dict[str, Any] = {"category": category}
    for status in ("published", "draft", "archived"):
        r = await org.post(
            "/questions",
            json={
                "title": f"Parcel {status} tracking",
                "answer": "Use the tracking link.",
                "categoryId": category,
                "status": status,
            },
        )
        assert r.status_code == 201, await r.get_data()
        ids[status] = (await r.get_json())["data"]
    r = await org.post(
        "/questions",
        json={
            "title": "Parcel scheduled tracking",
            "answer": "Later.",
            "categoryId": category,
            "status": "scheduled",
            "scheduledPublishAt": "2099-01-01T00:00:00Z",
        },
    )
    assert r.status_code == 201, await r.get_data()
    ids["scheduled"] = (await r.get_json())["data"]
    r = await org.post(
        "/questions",
        json={
            "title": "Parcel deleted tracking",
            "answer": "Gone.",
            "categoryId": category,
            "status": "published",
        },
    )
    ids["deleted"] = (await r.get_json())["data"]
    assert (await org.delete(f"/questions/{ids['deleted']['id']}")).status_code == 204
    return ids


async def test_a_public_key_reads_published_content_only(org: OrgClient) -> None:
    ids = await _content(org)
    key = (await make_public_key(org))["key"]
    r = await as_key(org, key, "GET", "/categories")
    assert r.status_code == 200
    assert ids["category"] in [c["id"] for c in (await r.get_json())["data"]]
    r = await as_key(org, key, "GET", f"/categories/{ids['category']}")
    assert r.status_code == 200
    published = ids["published"]
    for ref in (published["id"], published["slug"]):
        r = await as_key(org, key, "GET", f"/questions/{ref}")
        assert r.status_code == 200, ref
    for status in ("draft", "archived", "scheduled", "deleted"):
        for ref in (ids[status]["id"], ids[status]["slug"]):
            r = await as_key(org, key, "GET", f"/questions/{ref}")
            assert r.status_code == 404, (status, ref)
            assert (await r.get_json())["error"]["code"] == "question_not_found"
    for query in ("", "?q=parcel", f"?category={ids['category']}", "?status=published"):
        r = await as_key(org, key, "GET", f"/questions{query}")
        assert r.status_code == 200, query
        listed = [q["id"] for q in (await r.get_json())["data"]]
        assert listed == [published["id"]], query
    for status in ("draft", "archived", "scheduled"):
        r = await as_key(org, key, "GET", f"/questions?status={status}")
        assert r.status_code == 200
        assert (await r.get_json())["data"] == []
    # A secret read key still sees everything.
    r = await org.get("/questions", scope="read")
    assert len((await r.get_json())["data"]) == 4


async def test_a_public_key_reads_published_translations(org: OrgClient) -> None:
    r = await org.patch("/settings", json={"locales": ["en", "fr"]})
    assert r.status_code == 200, await r.get_data()
    ids = await _content(org)
    qid = ids["published"]["id"]
    r = await org.request(
        "PUT",
        f"/questions/{qid}/translations/fr",
        json={"title": "Suivi du colis", "answer": "Le lien.", "status": "published"},
    )
    assert r.status_code in (200, 201), await r.get_data()
    key = (await make_public_key(org))["key"]
    r = await as_key(org, key, "GET", f"/questions/{qid}?locale=fr")
    assert r.status_code == 200
    assert (await r.get_json())["data"]["title"] == "Suivi du colis"
    r = await as_key(org, key, "GET", "/questions", headers={"Accept-Language": "fr"})
    assert [q["title"] for q in (await r.get_json())["data"]] == ["Suivi du colis"]


async def test_every_other_route_is_insufficient_scope(org: OrgClient) -> None:
    ids = await _content(org)
    key = (await make_public_key(org))["key"]
    qid = ids["published"]["id"]
    calls = [
        ("POST", "/categories", {"name": "x"}),
        ("PATCH", f"/categories/{ids['category']}", {"name": "y"}),
        ("GET", "/categories/audit", None),
        ("POST", "/questions", {"title": "t", "answer": "a", "categoryId": ids["category"]}),
        ("DELETE", f"/questions/{qid}", None),
        ("GET", f"/questions/{qid}/revisions", None),
        ("GET", f"/questions/{qid}/translations", None),
        ("GET", "/questions?locale=en&translation=missing", None),
        ("GET", "/webhooks", None),
        ("GET", "/billing", None),
        ("GET", "/settings", None),
        ("GET", "/keys", None),
    ]
    for method, path, body in calls:
        kwargs: dict[str, Any] = {"json": body} if body is not None else {}
        r = await as_key(org, key, method, path, **kwargs)
        assert r.status_code == 403, (method, path, r.status_code)
        assert (await r.get_json())["error"]["code"] == "insufficient_scope"


async def test_the_response_cache_keeps_audiences_apart(org: OrgClient) -> None:
    ids = await _content(org)
    key = (await make_public_key(org))["key"]
    draft = ids["draft"]["id"]
    # Secret first: its list (with drafts) and its single read of a draft are cached...
    for _ in range(2):
        r = await org.get("/questions", scope="read")
        assert len((await r.get_json())["data"]) == 4
        assert (await org.get(f"/questions/{draft}", scope="read")).status_code == 200
    # ...and never served to the public key.
    for _ in range(2):
        r = await as_key(org, key, "GET", "/questions")
        assert len((await r.get_json())["data"]) == 1
        assert (await as_key(org, key, "GET", f"/questions/{draft}")).status_code == 404
        r = await as_key(org, key, "GET", "/questions?q=parcel")
        assert len((await r.get_json())["data"]) == 1
    # The reverse: public first, then secret.
    other = ids["archived"]["id"]
    r = await as_key(org, key, "GET", f"/questions?category={ids['category']}")
    assert len((await r.get_json())["data"]) == 1
    r = await org.get(f"/questions?category={ids['category']}", scope="read")
    assert len((await r.get_json())["data"]) == 4
    assert (await org.get(f"/questions/{other}", scope="read")).status_code == 200


@pytest.fixture
async def per_address_app() -> AsyncIterator[Quart]:
    from api.app import create_app

    settings = get_settings().model_copy(update={"faq_public_key_per_address_per_minute": 3})
    app = create_app(settings)
    async with app.test_app():
        yield app


def an_address() -> str:
    return f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}"


async def test_a_public_key_is_limited_per_client_address(
    per_address_app: Quart, engine: AsyncEngine
) -> None:
    org = await make_org(engine, per_address_app.test_client())
    key = (await make_public_key(org))["key"]
    left = 60 - time.time() % 60
    if left < 10:  # the per-address counter is a fixed one-minute window
        await asyncio.sleep(left + 0.05)
    visitor, other = an_address(), an_address()
    for _ in range(3):
        r = await as_key(org, key, "GET", "/categories", address=visitor)
        assert r.status_code == 200
    r = await as_key(org, key, "GET", "/categories", address=visitor)
    assert r.status_code == 429
    assert (await r.get_json())["error"]["code"] == "rate_limited"
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    # Another visitor of the same site still reads; secret keys have no per-address budget.
    assert (await as_key(org, key, "GET", "/categories", address=other)).status_code == 200
    for _ in range(5):
        r = await as_key(org, org.keys["read"], "GET", "/categories", address=visitor)
        assert r.status_code == 200


async def test_a_public_reader_counts_only_published_questions_of_a_category(
    org: OrgClient,
) -> None:
    ids = await _content(org)
    key = (await make_public_key(org))["key"]
    category = ids["category"]
    r = await org.get(f"/categories/{category}")
    everything = (await r.get_json())["data"]["questionCount"]
    r = await as_key(org, key, "GET", f"/categories/{category}")
    assert r.status_code == 200
    assert (await r.get_json())["data"]["questionCount"] == 1 < everything
    r = await as_key(org, key, "GET", "/categories", query_string={"limit": 100})
    listed = {c["id"]: c for c in (await r.get_json())["data"]}
    assert listed[category]["questionCount"] == 1
    # The secret reader's count is unchanged (and not served from the public reader's cache).
    r = await org.get(f"/categories/{category}")
    assert (await r.get_json())["data"]["questionCount"] == everything
