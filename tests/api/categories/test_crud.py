"""Categories CRUD, slugs and listing through HTTP (SPEC "Categories", CONTRACT 4 and 8)."""

from __future__ import annotations

import re

from tests.fixtures.orgs import OrgClient

ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
CAT_ID = re.compile(r"^cat_[0-9A-HJKMNP-TV-Z]{26}$")


async def create(org: OrgClient, **body: object) -> dict:
    r = await org.post("/categories", json=body, scope="write")
    assert r.status_code == 201, await r.get_json()
    return (await r.get_json())["data"]


async def test_create_returns_the_full_shape(org: OrgClient) -> None:
    data = await create(org, name="Billing", description="Invoices", order=3)
    assert CAT_ID.match(data["id"])
    assert data["slug"] == "billing"
    assert data["name"] == "Billing"
    assert data["description"] == "Invoices"
    assert data["order"] == 3
    assert data["parentId"] is None
    assert data["isDefault"] is False
    assert data["questionCount"] == 0
    assert ISO_MS.match(data["createdAt"]) and ISO_MS.match(data["updatedAt"])


async def test_optional_strings_are_null_and_order_defaults_to_zero(org: OrgClient) -> None:
    data = await create(org, name="Plain")
    assert data["description"] is None
    assert data["order"] == 0


async def test_get_by_id_and_by_slug(org: OrgClient) -> None:
    data = await create(org, name="Shipping")
    for ref in (data["id"], data["slug"]):
        r = await org.get(f"/categories/{ref}", scope="read")
        assert r.status_code == 200
        assert (await r.get_json())["data"] == data


async def test_auto_slug_folds_accents_and_punctuation(org: OrgClient) -> None:
    data = await create(org, name="  Crème Brûlée & Café — Ünïcode!  ")
    assert data["slug"] == "creme-brulee-cafe-unicode"


async def test_taken_auto_slug_gets_numbered_suffix(org: OrgClient) -> None:
    first = await create(org, name="Returns")
    second = await create(org, name="Returns")
    third = await create(org, name="returns!")
    assert [first["slug"], second["slug"], third["slug"]] == ["returns", "returns-2", "returns-3"]


async def test_reserved_words_never_become_slugs(org: OrgClient) -> None:
    assert (await create(org, name="Merge"))["slug"] == "merge-2"
    assert (await create(org, name="Audit"))["slug"] == "audit-2"
    for word in ("merge", "reorder", "audit"):
        r = await org.post("/categories", json={"name": "x", "slug": word}, scope="write")
        assert r.status_code == 400
        body = await r.get_json()
        assert body["error"]["code"] == "validation_failed"
        assert body["error"]["details"][0]["field"] == "slug"


async def test_manual_slug_conflict_is_409(org: OrgClient) -> None:
    await create(org, name="A", slug="same")
    r = await org.post("/categories", json={"name": "B", "slug": "same"}, scope="write")
    assert r.status_code == 409
    assert (await r.get_json())["error"]["code"] == "slug_conflict"


async def test_bad_manual_slug_is_validation_failed(org: OrgClient) -> None:
    for slug in ("Has Caps", "trailing-", "-lead", "a--b", "x" * 101, "ünï"):
        r = await org.post("/categories", json={"name": "n", "slug": slug}, scope="write")
        assert r.status_code == 400, slug
        assert (await r.get_json())["error"]["code"] == "validation_failed"


async def test_patch_changes_fields_and_not_the_slug_on_rename(org: OrgClient) -> None:
    data = await create(org, name="Old name")
    r = await org.patch(
        f"/categories/{data['id']}",
        json={"name": "New name", "description": "d", "order": 7},
        scope="write",
    )
    assert r.status_code == 200
    updated = (await r.get_json())["data"]
    assert updated["name"] == "New name"
    assert updated["slug"] == "old-name"
    assert updated["description"] == "d"
    assert updated["order"] == 7
    assert updated["updatedAt"] >= data["updatedAt"]


async def test_patch_slug_does_not_redirect_old_url(org: OrgClient) -> None:
    data = await create(org, name="Moving")
    r = await org.patch(f"/categories/{data['slug']}", json={"slug": "moved"}, scope="write")
    assert (await r.get_json())["data"]["slug"] == "moved"
    assert (await org.get("/categories/moving")).status_code == 404
    assert (await org.get("/categories/moved")).status_code == 200


async def test_patch_to_a_taken_slug_conflicts(org: OrgClient) -> None:
    await create(org, name="One")
    two = await create(org, name="Two")
    r = await org.patch(f"/categories/{two['id']}", json={"slug": "one"}, scope="write")
    assert r.status_code == 409
    assert (await r.get_json())["error"]["code"] == "slug_conflict"


async def test_patch_description_null_clears_it(org: OrgClient) -> None:
    data = await create(org, name="Desc", description="something")
    r = await org.patch(f"/categories/{data['id']}", json={"description": None}, scope="write")
    assert (await r.get_json())["data"]["description"] is None


async def test_patch_name_null_or_wrong_type_is_refused(org: OrgClient) -> None:
    data = await create(org, name="Typed")
    for body, field in (({"name": None}, "name"), ({"order": "5"}, "order"), ({"name": 5}, "name")):
        r = await org.patch(f"/categories/{data['id']}", json=body, scope="write")
        assert r.status_code == 400, body
        err = (await r.get_json())["error"]
        assert err["code"] == "validation_failed"
        assert err["details"][0]["field"] == field
    r = await org.get(f"/categories/{data['id']}")
    assert (await r.get_json())["data"] == data


async def test_parent_and_cycles(org: OrgClient) -> None:
    root = await create(org, name="Root")
    child = await create(org, name="Child", parentId=root["id"])
    grandchild = await create(org, name="Grandchild", parentId=child["id"])
    assert child["parentId"] == root["id"]
    for parent in (root["id"], child["id"], grandchild["id"]):
        r = await org.patch(f"/categories/{root['id']}", json={"parentId": parent}, scope="write")
        assert r.status_code == 400, parent
        err = (await r.get_json())["error"]
        assert err["code"] == "validation_failed"
        assert err["details"][0]["field"] == "parentId"
    r = await org.patch(f"/categories/{child['id']}", json={"parentId": None}, scope="write")
    assert (await r.get_json())["data"]["parentId"] is None


async def test_unknown_parent_is_400_category_not_found(org: OrgClient) -> None:
    r = await org.post(
        "/categories",
        json={"name": "Orphan", "parentId": "cat_01JD0000000000000000000000"},
        scope="write",
    )
    assert r.status_code == 400
    assert (await r.get_json())["error"]["code"] == "category_not_found"


async def test_a_long_parent_reference_is_still_a_reference(org: OrgClient) -> None:
    """A parentId names a category by id or by slug (up to 100 characters); one naming none,
    however long, is 400 category_not_found, not a shape error."""
    parent = await create(org, name="P", slug="p" * 100)
    child = await create(org, name="Child", parentId="p" * 100)
    assert child["parentId"] == parent["id"]
    r = await org.post("/categories", json={"name": "x", "parentId": "q" * 300}, scope="write")
    assert r.status_code == 400
    assert (await r.get_json())["error"]["code"] == "category_not_found"


async def test_unknown_category_is_404(org: OrgClient) -> None:
    for ref in ("nope", "cat_01JD0000000000000000000000"):
        r = await org.get(f"/categories/{ref}")
        assert r.status_code == 404
        assert (await r.get_json())["error"]["code"] == "category_not_found"


async def test_default_category_exists_and_is_protected(org: OrgClient) -> None:
    r = await org.get("/categories/uncategorized", scope="read")
    data = (await r.get_json())["data"]
    assert data["name"] == "Uncategorized"
    assert data["isDefault"] is True
    r = await org.delete(f"/categories/{data['id']}", scope="write")
    assert r.status_code == 409
    assert (await r.get_json())["error"]["code"] == "default_category_protected"
    r = await org.patch(f"/categories/{data['id']}", json={"name": "General"}, scope="write")
    assert r.status_code == 200
    assert (await r.get_json())["data"]["name"] == "General"


async def test_isdefault_and_questioncount_are_read_only(org: OrgClient) -> None:
    for field, value in (("isDefault", True), ("questionCount", 3), ("id", "cat_x")):
        r = await org.post("/categories", json={"name": "ro", field: value}, scope="write")
        assert r.status_code == 400
        err = (await r.get_json())["error"]
        assert err["code"] == "validation_failed"
        assert err["details"][0]["field"] == field


async def test_missing_name_and_non_object_bodies(org: OrgClient) -> None:
    r = await org.post("/categories", json={}, scope="write")
    err = (await r.get_json())["error"]
    assert r.status_code == 400 and err["code"] == "validation_failed"
    assert err["details"] == [{"field": "name", "issue": "required"}]
    for body in ([1, 2], "text", 3):
        r = await org.post("/categories", json=body, scope="write")
        assert r.status_code == 400
        assert (await r.get_json())["error"]["code"] == "validation_failed"


async def test_invalid_json_is_its_own_code_and_changes_nothing(org: OrgClient) -> None:
    before = await (await org.get("/categories")).get_json()
    r = await org.post(
        "/categories",
        data=b'{"name": "broken"',
        headers={"Content-Type": "application/json"},
        scope="write",
    )
    assert r.status_code == 400
    assert (await r.get_json())["error"]["code"] == "invalid_json"
    after = await (await org.get("/categories")).get_json()
    assert after == before


async def test_delete_is_204_without_body_and_then_404(org: OrgClient) -> None:
    data = await create(org, name="Temp")
    r = await org.delete(f"/categories/{data['id']}", scope="write")
    assert r.status_code == 204
    assert await r.get_data() == b""
    assert (await org.get(f"/categories/{data['id']}")).status_code == 404
    # The slug is free again.
    assert (await create(org, name="Temp"))["slug"] == "temp"


async def test_delete_moves_children_to_the_parent(org: OrgClient) -> None:
    top = await create(org, name="Top")
    middle = await create(org, name="Middle", parentId=top["id"])
    leaf = await create(org, name="Leaf", parentId=middle["id"])
    assert (await org.delete(f"/categories/{middle['id']}", scope="write")).status_code == 204
    r = await org.get(f"/categories/{leaf['id']}")
    assert (await r.get_json())["data"]["parentId"] == top["id"]


async def test_literal_segments_are_operations(org: OrgClient) -> None:
    for word in ("merge", "reorder", "audit"):
        if word != "audit":
            r = await org.get(f"/categories/{word}")
            assert r.status_code == 405, word
            assert (await r.get_json())["error"]["code"] == "method_not_allowed"
        r = await org.patch(f"/categories/{word}", json={"name": "x"}, scope="write")
        assert r.status_code == 405
        r = await org.delete(f"/categories/{word}", scope="write")
        assert r.status_code == 405


async def test_wrong_method_on_a_literal_segment_is_405_whatever_the_key(org: OrgClient) -> None:
    """405 is about the route, like ``PUT …/categories``: no key, a key without the scope the
    look-alike route needs, or any key of the org all get it."""
    for method, word, scope in (
        ("GET", "merge", None),
        ("GET", "reorder", "read"),
        ("PATCH", "audit", "read"),
        ("DELETE", "merge", None),
        ("DELETE", "reorder", "read"),
    ):
        r = await org.request(method, f"/categories/{word}", json={}, scope=scope)
        assert r.status_code == 405, (method, word, scope)
        assert (await r.get_json())["error"]["code"] == "method_not_allowed"
        assert "X-Request-Id" in r.headers


async def test_list_orders_by_order_then_id_and_paginates(org: OrgClient) -> None:
    made = [await create(org, name=f"C{i}", order=i % 3) for i in range(7)]
    seen: list[dict] = []
    cursor = None
    while True:
        query = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        r = await org.get("/categories", query=query, scope="read")
        assert r.status_code == 200
        body = await r.get_json()
        assert body["meta"]["pagination"]["limit"] == 3
        seen.extend(body["data"])
        cursor = body["meta"]["pagination"]["cursor"]
        assert body["meta"]["pagination"]["hasMore"] is (cursor is not None)
        if cursor is None:
            break
    ids = [c["id"] for c in seen]
    assert len(ids) == len(set(ids)) == 8  # 7 made + the default category
    keys = [(c["order"], c["id"]) for c in seen]
    assert keys == sorted(keys)
    assert {c["id"] for c in made} <= set(ids)


async def test_list_default_limit_is_50(org: OrgClient) -> None:
    body = await (await org.get("/categories")).get_json()
    assert body["meta"]["pagination"] == {"limit": 50, "cursor": None, "hasMore": False}


async def test_list_limit_and_cursor_errors(org: OrgClient) -> None:
    for limit in ("0", "101", "abc", "-1"):
        r = await org.get("/categories", query={"limit": limit})
        assert r.status_code == 400, limit
        err = (await r.get_json())["error"]
        assert err["code"] == "validation_failed"
        assert err["details"][0]["field"] == "limit"
    await create(org, name="P1")
    await create(org, name="P2")
    body = await (await org.get("/categories", query={"limit": 1})).get_json()
    cursor = body["meta"]["pagination"]["cursor"]
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    for bad in (tampered, "not-a-cursor", "x" * 600):
        r = await org.get("/categories", query={"cursor": bad})
        assert r.status_code == 400
        err = (await r.get_json())["error"]
        assert err["code"] == "validation_failed"
        assert err["details"][0]["field"] == "cursor"


async def test_search_matches_prefixes_accents_and_ranks(org: OrgClient) -> None:
    await create(org, name="Payments", description="Card and bank transfers")
    await create(org, name="Shipping", description="Payment on delivery is possible")
    await create(org, name="Café Menu", description="drinks")
    r = await org.get("/categories", query={"q": "paym"})
    names = [c["name"] for c in (await r.get_json())["data"]]
    assert names == ["Payments", "Shipping"]  # name match ranks above description match
    r = await org.get("/categories", query={"q": "CAFE"})
    assert [c["name"] for c in (await r.get_json())["data"]] == ["Café Menu"]
    r = await org.get("/categories", query={"q": "payment card"})
    assert [c["name"] for c in (await r.get_json())["data"]] == ["Payments"]
    r = await org.get("/categories", query={"q": "zzz"})
    assert (await r.get_json())["data"] == []


async def test_search_finds_words_inside_hosts_versions_and_emails(org: OrgClient) -> None:
    made = await create(org, name="API v2.0", description="Write to help@example.com")
    for q in ("example", "help", "com", "v2"):
        r = await org.get("/categories", query={"q": q})
        assert [c["id"] for c in (await r.get_json())["data"]] == [made["id"]], q


async def test_search_cursor_walks_every_result_once(org: OrgClient) -> None:
    for i in range(9):
        await create(org, name=f"Topic {i}", description="topic " * (i % 3))
    seen: list[str] = []
    cursor = None
    while True:
        query = {"q": "topic", "limit": 2, **({"cursor": cursor} if cursor else {})}
        body = await (await org.get("/categories", query=query)).get_json()
        seen.extend(c["id"] for c in body["data"])
        cursor = body["meta"]["pagination"]["cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 9
