"""Listing: order, cursors, filters; search: prefixes, accents, all words, ranking."""

from __future__ import annotations

from tests.api.questions.helpers import create, default_category, error_code, fields


async def walk(org, query):
    """Every page of a list, following the cursor; returns the ids in order."""
    ids, cursor, pages = [], None, 0
    while True:
        params = dict(query, **({"cursor": cursor} if cursor else {}))
        r = await org.get("/questions", query=params, scope="read")
        assert r.status_code == 200, await r.get_json()
        body = await r.get_json()
        ids += [q["id"] for q in body["data"]]
        pages += 1
        meta = body["meta"]["pagination"]
        assert meta["limit"] == int(query.get("limit", 20))
        assert meta["hasMore"] == (meta["cursor"] is not None)
        cursor = meta["cursor"]
        if cursor is None:
            return ids, pages


async def test_list_orders_by_order_then_id_and_cursor_walks_everything(org):
    made = [await create(org, title=f"Question {i}", order=i % 3) for i in range(7)]
    expected = [q["id"] for q in sorted(made, key=lambda q: (q["order"], q["id"]))]
    ids, pages = await walk(org, {"limit": 3})
    assert ids == expected and pages == 3
    r = await org.get("/questions", scope="read")
    body = await r.get_json()
    assert body["meta"]["pagination"] == {"limit": 20, "cursor": None, "hasMore": False}


async def test_limit_and_cursor_errors(org, other_org):
    for limit in ("0", "101", "x"):
        r = await org.get("/questions", query={"limit": limit}, scope="read")
        assert r.status_code == 400
        body = await r.get_json()
        assert error_code(body) == "validation_failed" and fields(body) == {"limit"}
    for _ in range(3):
        await create(org)
    r = await org.get("/questions", query={"limit": 1}, scope="read")
    cursor = (await r.get_json())["meta"]["pagination"]["cursor"]
    for bad in ("garbage", cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")):
        r = await org.get("/questions", query={"cursor": bad}, scope="read")
        assert r.status_code == 400 and fields(await r.get_json()) == {"cursor"}
    # A cursor of a search is not a cursor of the plain list.
    r = await org.get("/questions", query={"limit": 1, "q": "password"}, scope="read")
    search_cursor = (await r.get_json())["meta"]["pagination"]["cursor"]
    r = await org.get("/questions", query={"cursor": search_cursor}, scope="read")
    assert r.status_code == 400
    r = await org.get("/questions", query={"status": "live"}, scope="read")
    assert r.status_code == 400 and fields(await r.get_json()) == {"status"}


async def test_category_filter_by_slug_or_id_and_status_filter(org):
    r = await org.post("/categories", json={"name": "Billing"}, scope="write")
    billing = (await r.get_json())["data"]["id"]
    in_billing = await create(org, billing, title="Invoice", status="published")
    draft_billing = await create(org, billing, title="Refund")
    elsewhere = await create(org, title="Elsewhere", status="published")
    scheduled = await create(org, title="Later", scheduledPublishAt="2099-01-01T00:00:00Z")
    archived = await create(org, title="Old", status="archived")
    for ref in ("billing", billing):
        ids, _ = await walk(org, {"category": ref})
        assert sorted(ids) == sorted([in_billing["id"], draft_billing["id"]])
    ids, _ = await walk(org, {"category": "billing", "status": "published"})
    assert ids == [in_billing["id"]]
    ids, _ = await walk(org, {"status": "published"})
    assert sorted(ids) == sorted([in_billing["id"], elsewhere["id"]])
    assert (await walk(org, {"status": "scheduled"}))[0] == [scheduled["id"]]
    assert (await walk(org, {"status": "archived"}))[0] == [archived["id"]]
    assert (await walk(org, {"status": "draft"}))[0] == [draft_billing["id"]]
    assert (await walk(org, {"category": "no-such-category"}))[0] == []


async def search(org, q, **extra):
    ids, _ = await walk(org, {"q": q, **extra})
    return ids


async def test_search_prefix_case_accents_and_all_words(org):
    category_id = await default_category(org)
    pw = await create(org, category_id, title="Reset your PASSWORD", answer="Click the link.")
    cafe = await create(org, category_id, title="Café opening hours", answer="From nine.")
    both = await create(org, category_id, title="Billing", answer="Invoices and payments.")
    assert await search(org, "pass") == [pw["id"]]
    assert await search(org, "Password") == [pw["id"]]
    assert await search(org, "cafe") == [cafe["id"]]
    assert await search(org, "CAFÉ") == [cafe["id"]]
    assert await search(org, "invoice pay") == [both["id"]]
    assert await search(org, "invoice password") == []
    assert await search(org, "reset link") == [pw["id"]]
    assert await search(org, "?!") == []
    assert await search(org, "zebra") == []


async def test_title_match_ranks_above_answer_match(org):
    category_id = await default_category(org)
    answer_only = await create(
        org,
        category_id,
        title="Account basics",
        answer="Your password password password can be changed; password rules apply.",
    )
    title = await create(org, category_id, title="Password rules", answer="Eight characters.")
    two_words = await create(
        org, category_id, title="Change password", answer="Go to settings to change it."
    )
    ids = await search(org, "password")
    assert ids[-1] == answer_only["id"]
    assert set(ids) == {answer_only["id"], title["id"], two_words["id"]}
    assert (await search(org, "change password"))[0] == two_words["id"]


async def test_a_title_holding_some_words_ranks_above_an_answer_only_match(org):
    category_id = await default_category(org)
    answer_only = await create(
        org,
        category_id,
        title="Account basics",
        answer="refund invoice refund invoice refund invoice refund invoice refund invoice",
    )
    partly_in_title = await create(
        org, category_id, title="Refund policy", answer="Ask for it with your invoice."
    )
    whole_title = await create(org, category_id, title="Invoice refund", answer="Yes.")
    ids = await search(org, "refund invoice")
    assert ids == [whole_title["id"], partly_in_title["id"], answer_only["id"]]


async def test_words_inside_hosts_versions_and_emails_are_found(org):
    category_id = await default_category(org)
    q = await create(
        org,
        category_id,
        title="Upgrade to version 2.0",
        answer="Write to help@example.com or see docs.example.org/setup.html.",
    )
    for text in ("2.0", "version 2", "example", "help example com", "docs setup", "html"):
        assert await search(org, text) == [q["id"]], text
    r = await org.patch(f"/questions/{q['id']}", json={"title": "Upgrade to 3.1"}, scope="write")
    assert r.status_code == 200
    assert await search(org, "3.1") == [q["id"]]
    assert await search(org, "2.0") == []


async def test_search_cursor_walks_every_result_exactly_once(org):
    category_id = await default_category(org)
    made = []
    for i in range(13):
        # Many equal ranks (same text) and a few different ones.
        title = "Shipping question" if i % 2 else f"Shipping and delivery {i}"
        answer = "shipping " * (i % 4 + 1)
        made.append((await create(org, category_id, title=title, answer=answer))["id"])
    await create(org, category_id, title="Unrelated", answer="Nothing here")
    full = await search(org, "ship", limit=100)
    paged, pages = await walk(org, {"q": "ship", "limit": 4})
    assert pages == 4
    assert paged == full
    assert sorted(paged) == sorted(made) and len(set(paged)) == len(made)
