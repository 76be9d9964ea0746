"""Create, read, update and delete of questions, by id and by slug."""

from __future__ import annotations

import asyncio

import pytest

from tests.api.questions.helpers import create, default_category, error_code, fields


async def test_create_returns_the_question(org):
    category_id = await default_category(org)
    r = await org.post(
        "/questions",
        json={
            "title": "How do I reset my password?",
            "answer": "Use the link.",
            "categoryId": category_id,
            "status": "draft",
        },
        scope="write",
    )
    assert r.status_code == 201
    q = (await r.get_json())["data"]
    assert q["id"].startswith("q_") and q["id"][2:].isupper() and len(q["id"]) == 28
    assert q["slug"] == "how-do-i-reset-my-password"
    assert q["status"] == "draft"
    assert q["categoryId"] == category_id
    assert q["order"] == 0
    assert q["publishedAt"] is None and q["scheduledPublishAt"] is None
    assert q["createdAt"].endswith("Z") and q["createdAt"] == q["updatedAt"]
    assert q["locale"] == "en"  # the org's default locale (issue 15)
    assert set(q) == {
        "id",
        "slug",
        "locale",
        "title",
        "answer",
        "status",
        "categoryId",
        "order",
        "audiences",  # issue 39: empty, for everyone
        "publishedAt",
        "scheduledPublishAt",
        "createdAt",
        "updatedAt",
        "externalId",  # null: made by the API, not by an import (issue 29)
        "draft",  # as GET shows it (issue 40): none yet
    }
    assert q["externalId"] is None and q["draft"] is None and q["audiences"] == []
    for ref in (q["id"], q["slug"]):
        r = await org.get(f"/questions/{ref}", scope="read")
        assert r.status_code == 200
        # The create's response is the question as GET shows it (issue 40).
        assert (await r.get_json())["data"] == q


async def test_required_fields_and_limits_name_each_bad_field(org):
    r = await org.post("/questions", json={}, scope="write")
    assert r.status_code == 400
    body = await r.get_json()
    assert error_code(body) == "validation_failed"
    assert fields(body) == {"title", "answer", "categoryId", "status"}

    category_id = await default_category(org)
    r = await org.post(
        "/questions",
        json={
            "title": "x" * 501,
            "answer": "",
            "categoryId": category_id,
            "status": "live",
            "order": "3",
        },
        scope="write",
    )
    assert r.status_code == 400
    body = await r.get_json()
    assert error_code(body) == "validation_failed"
    assert fields(body) == {"title", "answer", "status", "order"}

    ok = {"title": "t" * 500, "answer": "a" * 100_000, "categoryId": category_id}
    r = await org.post("/questions", json={**ok, "status": "draft"}, scope="write")
    assert r.status_code == 201
    r = await org.post(
        "/questions", json={**ok, "answer": "a" * 100_001, "status": "draft"}, scope="write"
    )
    assert r.status_code == 400 and fields(await r.get_json()) == {"answer"}


@pytest.mark.parametrize(
    "extra",
    [{"id": "q_X"}, {"publishedAt": "2026-01-01T00:00:00Z"}, {"createdAt": "x"}, {"nope": 1}],
)
async def test_unknown_or_read_only_fields_are_refused(org, extra):
    category_id = await default_category(org)
    body = {"title": "T", "answer": "A", "categoryId": category_id, "status": "draft", **extra}
    r = await org.post("/questions", json=body, scope="write")
    assert r.status_code == 400
    assert fields(await r.get_json()) == set(extra)


async def test_body_that_is_not_an_object_or_not_json(org):
    r = await org.post("/questions", json=["a"], scope="write")
    assert r.status_code == 400 and error_code(await r.get_json()) == "validation_failed"
    r = await org.post("/questions", data=b"{nope", scope="write")
    assert r.status_code == 400 and error_code(await r.get_json()) == "invalid_json"


async def test_naive_timestamp_is_refused(org):
    category_id = await default_category(org)
    r = await org.post(
        "/questions",
        json={
            "title": "T",
            "answer": "A",
            "categoryId": category_id,
            "status": "draft",
            "scheduledPublishAt": "2030-01-01T10:00:00",
        },
        scope="write",
    )
    assert r.status_code == 400
    assert fields(await r.get_json()) == {"scheduledPublishAt"}


async def test_timestamp_outside_the_calendar_in_utc_is_validation_failed(org):
    """Year 1 at +01:00 is year 0 in UTC: refused like any bad time, never a 500."""
    q = await create(org)
    for at in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"):
        r = await org.post(
            "/questions",
            json={
                "title": "T",
                "answer": "A",
                "categoryId": q["categoryId"],
                "status": "draft",
                "scheduledPublishAt": at,
            },
            scope="write",
        )
        assert r.status_code == 400
        body = await r.get_json()
        assert error_code(body) == "validation_failed"
        assert fields(body) == {"scheduledPublishAt"}
        r = await org.patch(f"/questions/{q['id']}", json={"scheduledPublishAt": at}, scope="write")
        assert r.status_code == 400
        assert fields(await r.get_json()) == {"scheduledPublishAt"}


async def test_unknown_category_is_400_category_not_found(org, other_org):
    foreign = await default_category(other_org)
    # (A slug names a category too, issue 41: "uncategorized" is this org's default one.)
    for ref in (foreign, "cat_01JD0000000000000000000000", "no-such-slug", "", "x" * 300):
        r = await org.post(
            "/questions",
            json={"title": "T", "answer": "A", "categoryId": ref, "status": "draft"},
            scope="write",
        )
        assert r.status_code == 400
        body = await r.get_json()
        assert error_code(body) == "category_not_found"
        assert fields(body) == {"categoryId"}
    q = await create(org)
    r = await org.patch(f"/questions/{q['id']}", json={"categoryId": foreign}, scope="write")
    assert r.status_code == 400 and error_code(await r.get_json()) == "category_not_found"


async def test_auto_slugs_fold_accents_and_take_suffixes(org):
    a = await create(org, title="Où est ma facture ?")
    b = await create(org, title="Où est ma facture?")
    c = await create(org, title="!!!")
    assert a["slug"] == "ou-est-ma-facture"
    assert b["slug"] == "ou-est-ma-facture-2"
    assert c["slug"] == "item"
    long = await create(org, title="word " * 100)
    assert len(long["slug"]) <= 200 and not long["slug"].endswith("-")


async def test_reorder_is_the_only_reserved_question_slug(org):
    auto = await create(org, title="Reorder")
    assert auto["slug"] == "reorder-2"
    merge = await create(org, title="Merge")
    assert merge["slug"] == "merge"
    r = await org.get("/questions/merge", scope="read")
    assert r.status_code == 200 and (await r.get_json())["data"]["id"] == merge["id"]
    category_id = await default_category(org)
    r = await org.post(
        "/questions",
        json={
            "title": "T",
            "answer": "A",
            "categoryId": category_id,
            "status": "draft",
            "slug": "reorder",
        },
        scope="write",
    )
    assert r.status_code == 400
    assert fields(await r.get_json()) == {"slug"}
    r = await org.patch(f"/questions/{merge['id']}", json={"slug": "reorder"}, scope="write")
    assert r.status_code == 400 and error_code(await r.get_json()) == "validation_failed"


async def test_manual_slugs_and_conflicts(org):
    a = await create(org, slug="custom-one")
    assert a["slug"] == "custom-one"
    category_id = await default_category(org)
    body = {"title": "T", "answer": "A", "categoryId": category_id, "status": "draft"}
    r = await org.post("/questions", json={**body, "slug": "custom-one"}, scope="write")
    assert r.status_code == 409 and error_code(await r.get_json()) == "slug_conflict"
    for bad in ("Upper", "a--b", "-a", "a_b", "x" * 201):
        r = await org.post("/questions", json={**body, "slug": bad}, scope="write")
        assert r.status_code == 400 and fields(await r.get_json()) == {"slug"}, bad
    b = await create(org, slug="custom-two")
    r = await org.patch(f"/questions/{b['id']}", json={"slug": "custom-one"}, scope="write")
    assert r.status_code == 409 and error_code(await r.get_json()) == "slug_conflict"
    r = await org.patch(f"/questions/{b['id']}", json={"slug": "custom-three"}, scope="write")
    assert r.status_code == 200 and (await r.get_json())["data"]["slug"] == "custom-three"
    assert (await org.get("/questions/custom-two", scope="read")).status_code == 404
    assert (await org.get("/questions/custom-three", scope="read")).status_code == 200


async def test_patch_changes_fields_and_renaming_keeps_the_slug(org, org_factory):
    q = await create(org, title="Old title", order=5)
    assert q["order"] == 5
    r = await org.post("/categories", json={"name": "Billing"}, scope="write")
    other_category = (await r.get_json())["data"]["id"]
    r = await org.patch(
        f"/questions/{q['slug']}",
        json={
            "title": "New title",
            "answer": "New answer",
            "order": 2,
            "categoryId": other_category,
        },
        scope="write",
    )
    assert r.status_code == 200
    data = (await r.get_json())["data"]
    assert data["title"] == "New title" and data["answer"] == "New answer"
    assert data["order"] == 2 and data["categoryId"] == other_category
    assert data["slug"] == "old-title"
    assert data["updatedAt"] > q["updatedAt"]
    r = await org.get("/categories/billing", scope="read")
    assert (await r.get_json())["data"]["questionCount"] == 1
    for field in ("title", "answer", "categoryId", "status", "slug", "order"):
        r = await org.patch(f"/questions/{q['id']}", json={field: None}, scope="write")
        assert r.status_code == 400 and fields(await r.get_json()) == {field}, field
    r = await org.patch(f"/questions/{q['id']}", json={"title": ""}, scope="write")
    assert r.status_code == 400 and fields(await r.get_json()) == {"title"}


async def test_unknown_question_is_404(org):
    for method in ("get", "patch", "delete"):
        for ref in ("q_01JD0000000000000000000000", "no-such-slug"):
            kwargs = {"json": {"title": "x"}} if method == "patch" else {}
            r = await getattr(org, method)(f"/questions/{ref}", scope="write", **kwargs)
            assert r.status_code == 404
            assert error_code(await r.get_json()) == "question_not_found"


async def test_soft_delete_hides_the_question_and_frees_its_slug(org):
    q = await create(org, title="Delete me please")
    r = await org.delete(f"/questions/{q['id']}", scope="write")
    assert r.status_code == 204 and await r.get_data() == b""
    for ref in (q["id"], q["slug"]):
        assert (await org.get(f"/questions/{ref}", scope="read")).status_code == 404
        assert (await org.delete(f"/questions/{ref}", scope="write")).status_code == 404
        r = await org.patch(f"/questions/{ref}", json={"title": "x"}, scope="write")
        assert r.status_code == 404
    r = await org.get("/questions", scope="read")
    assert q["id"] not in [x["id"] for x in (await r.get_json())["data"]]
    r = await org.get("/questions", query={"q": "delete"}, scope="read")
    assert (await r.get_json())["data"] == []
    again = await create(org, title="Delete me please")
    assert again["slug"] == q["slug"] and again["id"] != q["id"]
    r = await org.get("/categories/uncategorized", scope="read")
    assert (await r.get_json())["data"]["questionCount"] == 1


async def test_scopes(org):
    category_id = await default_category(org)
    body = {"title": "T", "answer": "A", "categoryId": category_id, "status": "draft"}
    r = await org.post("/questions", json=body, scope="read")
    assert r.status_code == 403 and error_code(await r.get_json()) == "insufficient_scope"
    q = await create(org)
    assert (await org.get(f"/questions/{q['id']}", scope="read")).status_code == 200
    assert (await org.get("/questions", scope="read")).status_code == 200
    assert (await org.get(f"/questions/{q['id']}/revisions", scope="read")).status_code == 200
    for method, path, kw in (
        ("patch", f"/questions/{q['id']}", {"json": {"title": "x"}}),
        ("delete", f"/questions/{q['id']}", {}),
        ("post", "/questions/reorder", {"json": {"ids": [q["id"]]}}),
        ("post", f"/questions/{q['id']}/revisions/rev_x/restore", {}),
    ):
        r = await getattr(org, method)(path, scope="read", **kw)
        assert r.status_code == 403, path
    r = await org.get("/questions", scope=None)
    assert r.status_code == 401


async def test_wrong_method_on_reorder_is_405(org):
    for method in ("get", "patch", "delete"):
        kwargs = {"json": {}} if method == "patch" else {}
        r = await getattr(org, method)("/questions/reorder", scope="write", **kwargs)
        assert r.status_code == 405 and error_code(await r.get_json()) == "method_not_allowed"
    # Below it, `reorder` is simply no question.
    r = await org.get("/questions/reorder/revisions", scope="read")
    assert r.status_code == 404 and error_code(await r.get_json()) == "question_not_found"
    r = await org.post("/questions/reorder/revisions/rev_x/restore", scope="write")
    assert r.status_code == 404 and error_code(await r.get_json()) == "question_not_found"


async def test_wrong_method_on_reorder_is_405_whatever_the_key(org):
    """405 is about the route: no key, or a key without the scope of the look-alike route."""
    for method, scope in (("GET", None), ("PATCH", "read"), ("DELETE", None)):
        r = await org.request(method, "/questions/reorder", json={}, scope=scope)
        assert r.status_code == 405, (method, scope)
        assert error_code(await r.get_json()) == "method_not_allowed"


async def test_openapi_documents_every_question_route(client):
    r = await client.get("/openapi.json")
    assert r.status_code == 200
    paths = (await r.get_json())["paths"]
    question_paths = {p for p in paths if "/questions" in p}
    assert question_paths == {
        "/api/v1/{org}/questions",
        "/api/v1/{org}/questions/reorder",
        "/api/v1/{org}/questions/{ref}",
        "/api/v1/{org}/questions/{ref}/revisions",
        "/api/v1/{org}/questions/{ref}/revisions/{revision_id}/restore",
        # Drafts, review and diffs (issue 30).
        "/api/v1/{org}/questions/{ref}/draft",
        "/api/v1/{org}/questions/{ref}/draft/publish",
        "/api/v1/{org}/questions/{ref}/draft/review",
        "/api/v1/{org}/questions/{ref}/draft/approve",
        "/api/v1/{org}/questions/{ref}/draft/reject",
        "/api/v1/{org}/questions/{ref}/revisions/{revision_id}/diff",
        # Similar questions (issue 28).
        "/api/v1/{org}/questions/{ref}/similar",
        "/api/v1/{org}/questions/{ref}/translations",
        "/api/v1/{org}/questions/{ref}/translations/{locale}",
        "/api/v1/{org}/questions/{ref}/analytics",
        "/api/v1/{org}/analytics/questions",
        # A reader's "was this helpful" with a publishable key (issue 41: the widget).
        "/api/v1/{org}/questions/{ref}/votes",
    }
    assert set(paths["/api/v1/{org}/questions/{ref}"]) >= {"get", "patch", "delete"}


async def test_concurrent_creates_with_one_title_get_distinct_slugs(org):
    category_id = await default_category(org)
    body = {"title": "Same title", "answer": "A", "categoryId": category_id, "status": "draft"}
    results = await asyncio.gather(
        *(org.post("/questions", json=body, scope="write") for _ in range(6))
    )
    assert [r.status_code for r in results] == [201] * 6
    slugs = sorted([(await r.get_json())["data"]["slug"] for r in results])
    assert slugs == sorted(["same-title"] + [f"same-title-{n}" for n in range(2, 7)])
    results = await asyncio.gather(
        *(org.post("/questions", json={**body, "slug": "manual"}, scope="write") for _ in range(4))
    )
    assert sorted(r.status_code for r in results) == [201, 409, 409, 409]
