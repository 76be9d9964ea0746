"""Conditional requests (issue 30, "no lost updates"): strong ETags on single resources, 304 on
If-None-Match (through Quart and the fast path), If-Match on PATCH / PUT / DELETE (412
``precondition_failed`` with the current resource), weak list tags from the org's
generation, and two editors racing on one question: one 200, one 412."""

from __future__ import annotations

import asyncio
from typing import Any

from quart import Quart
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.http.fast_path import CachedReads
from api.questions.models import QuestionRevision as Revision
from tenancy.db import tenant_session
from tests.api.questions.helpers import create
from tests.fixtures.locks import question_row_locked
from tests.fixtures.orgs import OrgClient


def etag(response: Any) -> str:
    tag = response.headers.get("ETag")
    assert tag, f"no ETag on {response.status_code}"
    return str(tag)


async def read(org: OrgClient, path: str, **headers: str) -> Any:
    return await org.get(path, scope="read", headers=headers)


async def data(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = (await response.get_json())["data"]
    return body


async def enable_locales(org: OrgClient, locales: list[str]) -> None:
    r = await org.patch("/settings", json={"locales": locales})
    assert r.status_code == 200, await r.get_json()


async def assert_revalidates(org: OrgClient, path: str) -> str:
    """GET ``path``: a strong tag; the same GET with it in If-None-Match: 304, no body."""
    return await assert_revalidates_as(org, path, "read")


async def assert_revalidates_as(org: OrgClient, path: str, scope: str) -> str:
    async def read(org: OrgClient, path: str, **headers: str) -> Any:
        return await org.get(path, scope=scope, headers=headers)

    first = await read(org, path)
    assert first.status_code == 200, await first.get_data()
    tag = etag(first)
    assert not tag.startswith("W/") and tag.startswith('"')
    again = await read(org, path, **{"If-None-Match": tag})
    assert again.status_code == 304, path
    assert await again.get_data() == b""
    assert etag(again) == tag
    other = await read(org, path, **{"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and etag(other) == tag
    return tag


async def test_single_resources_carry_a_strong_etag_and_answer_304(org: OrgClient) -> None:
    await enable_locales(org, ["en", "fr"])
    q = await create(org, title="Where is my parcel?")
    r = await org.post("/categories", json={"name": "Shipping"}, scope="write")
    category = await data(r)
    r = await org.post(
        "/webhooks", json={"url": "https://hooks.example.com/faq", "events": ["question.updated"]}
    )
    assert r.status_code == 201, await r.get_data()
    webhook = await data(r)
    r = await org.request(
        "PUT",
        f"/questions/{q['id']}/translations/fr",
        json={"title": "Où est mon colis ?", "answer": "En route.", "status": "published"},
        scope="write",
    )
    assert r.status_code == 201
    paths = (
        f"/questions/{q['id']}",
        f"/questions/{q['slug']}",
        f"/categories/{category['id']}",
        f"/webhooks/{webhook['id']}",
        "/settings",
        f"/questions/{q['id']}/translations/fr",
    )
    tags = {path: await assert_revalidates(org, path) for path in paths}
    # The same question by id and by slug is one representation.
    assert tags[f"/questions/{q['id']}"] == tags[f"/questions/{q['slug']}"]
    # Served in another locale, it is another representation.
    fr = await read(org, f"/questions/{q['id']}?locale=fr")
    assert fr.status_code == 200 and etag(fr) != tags[f"/questions/{q['id']}"]
    # A change gives a new tag: the old one is answered in full.
    r = await org.patch(f"/questions/{q['id']}", json={"answer": "Ask the carrier."}, scope="write")
    assert r.status_code == 200
    after = await read(org, f"/questions/{q['id']}", **{"If-None-Match": tags[paths[0]]})
    assert after.status_code == 200 and etag(after) != tags[paths[0]]
    assert (await data(after))["answer"] == "Ask the carrier."


async def test_if_match_guards_patch_and_delete_of_a_question(
    engine: AsyncEngine, org: OrgClient
) -> None:
    q = await create(org, title="How do I pay?")
    path = f"/questions/{q['id']}"
    tag = etag(await read(org, path))
    # An edit the client did not see.
    r = await org.patch(path, json={"answer": "By card."}, scope="write")
    assert r.status_code == 200
    seen_by_others = etag(r)
    assert seen_by_others == etag(await read(org, path))  # a write's tag is GET's
    stale = await org.patch(
        path, json={"answer": "By cheque."}, scope="write", headers={"If-Match": tag}
    )
    assert stale.status_code == 412
    body = await stale.get_json()
    assert body["error"]["code"] == "precondition_failed"
    assert body["data"]["answer"] == "By card."  # the current resource
    assert body["data"]["id"] == q["id"]
    assert etag(stale) == seen_by_others
    assert (await data(await read(org, path)))["answer"] == "By card."  # nothing changed
    # With the current tag: 200, and its tag chains into the next write.
    ok = await org.patch(
        path, json={"answer": "By cheque."}, scope="write", headers={"If-Match": seen_by_others}
    )
    assert ok.status_code == 200, await ok.get_json()
    chained = await org.patch(
        path, json={"title": "How can I pay?"}, scope="write", headers={"If-Match": etag(ok)}
    )
    assert chained.status_code == 200, await chained.get_json()
    # A slug change: the response's tag is the one GET gives at the new slug.
    moved = await org.patch(
        f"/questions/{q['slug']}", json={"slug": "paying"}, scope="write",
        headers={"If-Match": etag(chained)},
    )  # fmt: skip
    assert moved.status_code == 200, await moved.get_json()
    assert etag(moved) == etag(await read(org, "/questions/paying"))
    # A weak tag never satisfies If-Match; * does when the resource exists.
    weak = await org.patch(
        path, json={"order": 3}, scope="write", headers={"If-Match": "W/" + etag(moved)}
    )
    assert weak.status_code == 412
    star = await org.patch(path, json={"order": 3}, scope="write", headers={"If-Match": "*"})
    assert star.status_code == 200
    # DELETE: a stale tag keeps the question, the current one deletes it.
    r = await org.delete(path, scope="write", headers={"If-Match": etag(moved)})
    assert r.status_code == 412
    assert (await read(org, path)).status_code == 200
    r = await org.delete(path, scope="write", headers={"If-Match": etag(await read(org, path))})
    assert r.status_code == 204
    # Gone: 404 as without the header (preconditions apply only to what would succeed).
    r = await org.delete(path, scope="write", headers={"If-Match": "*"})
    assert r.status_code == 404 and (await r.get_json())["error"]["code"] == "question_not_found"
    async with tenant_session(engine, org.info.schema_name) as session:
        revisions = await session.scalar(
            select(func.count()).select_from(Revision).where(Revision.question_id == q["id"])
        )
    assert revisions == 5  # the five PATCHes that passed, none of the refused


async def test_two_editors_racing_on_one_question(engine: AsyncEngine, org: OrgClient) -> None:
    """Both send the same If-Match while a third transaction holds the row, so both have read
    the question before either writes: exactly one 200, one 412."""
    q = await create(org, title="Can I change my plan?")
    path = f"/questions/{q['id']}"
    tag = etag(await read(org, path))
    async with question_row_locked(engine, org, q["id"]):
        editors = [
            asyncio.create_task(
                org.patch(path, json={"answer": text}, scope="write", headers={"If-Match": tag})
            )
            for text in ("Yes, any time.", "Only at renewal.")
        ]
        await asyncio.sleep(0.3)  # both are waiting on the row
        assert not any(e.done() for e in editors)
    answers = await asyncio.gather(*editors)
    assert sorted(r.status_code for r in answers) == [200, 412]
    won = next(r for r in answers if r.status_code == 200)
    lost = next(r for r in answers if r.status_code == 412)
    final = await data(await read(org, path))
    assert final["answer"] == (await data(won))["answer"]
    assert (await lost.get_json())["data"]["answer"] == final["answer"]
    async with tenant_session(engine, org.info.schema_name) as session:
        revisions = await session.scalar(
            select(func.count()).select_from(Revision).where(Revision.question_id == q["id"])
        )
    assert revisions == 1


async def test_if_match_on_categories_webhooks_settings(org: OrgClient) -> None:
    r = await org.post("/categories", json={"name": "Returns"}, scope="write")
    category = await data(r)
    r = await org.post(
        "/webhooks", json={"url": "https://hooks.example.com/a", "events": ["question.updated"]}
    )
    webhook = await data(r)
    cases = (
        (f"/categories/{category['id']}", {"name": "Refunds"}, "name", "write"),
        (f"/webhooks/{webhook['id']}", {"description": "CRM"}, "description", "admin"),
        ("/settings", {"locales": ["en", "de"]}, "locales", "admin"),
    )
    for path, change, field, scope in cases:
        tag = etag(await read(org, path))
        r = await org.patch(path, json=change, scope=scope)
        assert r.status_code == 200, (path, await r.get_json())
        # A bad body is 400 whatever the precondition says (input is checked first).
        bad = await org.patch(path, json={"nope": 1}, scope=scope, headers={"If-Match": tag})
        assert bad.status_code == 400, path
        stale = await org.patch(path, json=change, scope=scope, headers={"If-Match": tag})
        assert stale.status_code == 412, path
        body = await stale.get_json()
        assert body["error"]["code"] == "precondition_failed"
        assert body["data"][field] == change[field]
        ok = await org.patch(path, json=change, scope=scope, headers={"If-Match": etag(stale)})
        assert ok.status_code == 200, (path, await ok.get_json())
        assert etag(ok) == etag(await read(org, path))
    for path in (f"/categories/{category['id']}", f"/webhooks/{webhook['id']}"):
        scope = "admin"
        r = await org.delete(path, scope=scope, headers={"If-Match": '"not-the-tag"'})
        assert r.status_code == 412, path
        assert (await read(org, path)).status_code == 200
        r = await org.delete(path, scope=scope, headers={"If-Match": etag(await read(org, path))})
        assert r.status_code == 204, path


async def test_translations_honour_if_match_and_if_none_match(org: OrgClient) -> None:
    await enable_locales(org, ["en", "fr"])
    q = await create(org, title="Opening hours")
    path = f"/questions/{q['id']}/translations/fr"
    body = {"title": "Horaires", "answer": "De 9 h à 17 h."}
    # No translation yet: If-Match fails (nothing to match), If-None-Match: * creates.
    r = await org.request("PUT", path, json=body, scope="write", headers={"If-Match": "*"})
    assert r.status_code == 412 and (await r.get_json())["data"] is None
    r = await org.request("PUT", path, json=body, scope="write", headers={"If-None-Match": "*"})
    assert r.status_code == 201, await r.get_json()
    created = etag(r)
    assert created == etag(await read(org, path))
    r = await org.request("PUT", path, json=body, scope="write", headers={"If-None-Match": "*"})
    assert r.status_code == 412
    changed = {**body, "answer": "De 8 h à 18 h."}
    r = await org.request("PUT", path, json=changed, scope="write", headers={"If-Match": created})
    assert r.status_code == 200
    r = await org.request("PUT", path, json=body, scope="write", headers={"If-Match": created})
    assert r.status_code == 412
    assert (await r.get_json())["data"]["answer"] == "De 8 h à 18 h."
    r = await org.delete(path, scope="write", headers={"If-Match": created})
    assert r.status_code == 412
    r = await org.delete(path, scope="write", headers={"If-Match": etag(await read(org, path))})
    assert r.status_code == 204


async def test_another_orgs_resource_stays_404(org: OrgClient, other_org: OrgClient) -> None:
    q = await create(org, title="Private to org one")
    tag = etag(await read(org, f"/questions/{q['id']}"))
    for method, headers in (("PATCH", {"If-Match": tag}), ("DELETE", {"If-Match": "*"})):
        r = await other_org.request(
            method, f"/questions/{q['id']}", json={"answer": "x"} if method == "PATCH" else None,
            scope="write", headers=headers,
        )  # fmt: skip
        assert r.status_code == 404, method
        assert (await r.get_json())["error"]["code"] == "question_not_found"
        assert "data" not in await r.get_json()
    r = await other_org.get(f"/questions/{q['id']}", headers={"If-None-Match": tag})
    assert r.status_code == 404
    assert (await data(await read(org, f"/questions/{q['id']}")))["answer"] == q["answer"]


async def test_lists_carry_a_weak_tag_of_the_generation(org: OrgClient) -> None:
    await create(org, title="First")
    first = await read(org, "/questions?limit=10")
    tag = etag(first)
    assert tag.startswith('W/"g')
    again = await read(org, "/questions?limit=10", **{"If-None-Match": tag})
    assert again.status_code == 304 and await again.get_data() == b""
    assert etag(again) == tag
    # Another query of the same list is another tag.
    assert etag(await read(org, "/questions?limit=5")) != tag
    categories = await read(org, "/categories")
    assert etag(categories).startswith('W/"g')
    await create(org, title="Second")
    after = await read(org, "/questions?limit=10", **{"If-None-Match": tag})
    assert after.status_code == 200 and etag(after) != tag
    assert len((await after.get_json())["data"]) == 2
    # A list the generation does not cover: a weak tag of its body.
    webhooks = await read(org, "/webhooks")
    assert webhooks.status_code == 200 and etag(webhooks).startswith("W/")
    r = await read(org, "/webhooks", **{"If-None-Match": etag(webhooks)})
    assert r.status_code == 304


async def test_the_fast_path_answers_304(app: Quart, org: OrgClient) -> None:
    middleware: Any = app.asgi_app
    while not isinstance(middleware, CachedReads):  # outer middleware wraps it (``inner``)
        middleware = middleware.inner
    q = await create(org, title="Fast and conditional", status="published")
    path = f"/questions/{q['id']}"
    tag = etag(await read(org, path))
    for _ in range(2):
        served = middleware.served
        r = await read(org, path, **{"If-None-Match": tag})
        assert middleware.served == served + 1
        assert r.status_code == 304 and await r.get_data() == b""
        assert etag(r) == tag
        assert "X-Request-Id" in r.headers
    served = middleware.served
    r = await read(org, path, **{"If-None-Match": '"older"'})
    assert r.status_code == 200 and etag(r) == tag and middleware.served == served + 1
    # A list held in the cache: 304 there too.
    list_tag = etag(await read(org, "/questions?limit=20"))
    served = middleware.served
    r = await read(org, "/questions?limit=20", **{"If-None-Match": list_tag})
    assert r.status_code == 304 and middleware.served == served + 1


async def test_help_center_pages_answer_304(org: OrgClient) -> None:
    r = await org.patch("/settings", json={"helpCenter": {"enabled": True}})
    assert r.status_code == 200
    await create(org, title="Is there an app?", status="published")
    home = await org.client.get(f"/hc/{org.slug}/en")
    assert home.status_code == 200
    tag = etag(home)
    again = await org.client.get(f"/hc/{org.slug}/en", headers={"If-None-Match": tag})
    assert again.status_code == 304 and await again.get_data() == b""
    assert etag(again) == tag
    assert "Content-Security-Policy" in again.headers
    sitemap = await org.client.get(f"/hc/{org.slug}/sitemap.xml")
    r = await org.client.get(
        f"/hc/{org.slug}/sitemap.xml", headers={"If-None-Match": etag(sitemap)}
    )
    assert r.status_code == 304
    await create(org, title="Is there a desktop app?", status="published")
    changed = await org.client.get(f"/hc/{org.slug}/en", headers={"If-None-Match": tag})
    assert changed.status_code == 200 and etag(changed) != tag


async def test_openapi_documents_conditional_requests(client: Any) -> None:
    document = await (await client.get("/openapi.json")).get_json()
    item = document["paths"]["/api/v1/{org}/questions/{ref}"]
    read_params = {p["name"] for p in item["get"].get("parameters", [])}
    assert "If-None-Match" in read_params
    assert "304" in item["get"]["responses"]
    assert "ETag" in item["get"]["responses"]["200"]["headers"]
    for method in ("patch", "delete"):
        params = {p["name"] for p in item[method]["parameters"]}
        assert {"If-Match", "If-None-Match"} <= params, method
        failed = item[method]["responses"]["412"]
        assert "precondition_failed" in failed["description"]
        assert "application/json" in failed["content"]
    assert "ETag" in item["patch"]["responses"]["200"]["headers"]
    for path, method in (
        ("/api/v1/{org}/settings", "patch"),
        ("/api/v1/{org}/webhooks/{webhook_id}", "patch"),
        ("/api/v1/{org}/categories/{ref}", "delete"),
        ("/api/v1/{org}/questions/{ref}/translations/{locale}", "put"),
    ):
        assert "412" in document["paths"][path][method]["responses"], (path, method)
    # An operation that is not conditional says nothing of If-Match.
    merge = document["paths"]["/api/v1/{org}/categories/merge"]["post"]
    assert "If-Match" not in {p["name"] for p in merge.get("parameters", [])}


async def test_members_honour_if_match(org: OrgClient, other_org: OrgClient) -> None:
    r = await org.post(
        "/members", json={"email": "ada@example.com", "name": "Ada", "role": "author"}
    )
    assert r.status_code == 201, await r.get_json()
    member = await data(r)
    path = f"/members/{member['id']}"
    tag = await assert_revalidates_as(org, path, "admin")
    r = await org.patch(path, json={"name": "Ada L."})
    assert r.status_code == 200 and etag(r) != tag
    stale = await org.patch(path, json={"role": "editor"}, headers={"If-Match": tag})
    assert stale.status_code == 412
    assert (await stale.get_json())["data"]["name"] == "Ada L."
    assert (await data(await org.get(path)))["role"] == "author"
    r = await other_org.patch(path, json={"role": "editor"}, headers={"If-Match": "*"})
    assert r.status_code == 404
    r = await org.delete(path, headers={"If-Match": tag})
    assert r.status_code == 412
    assert (await data(await org.get(path)))["deactivatedAt"] is None
    r = await org.delete(path, headers={"If-Match": etag(await org.get(path))})
    assert r.status_code == 204
