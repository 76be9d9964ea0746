"""Spellings of one search (``q=e!``, ``q=E``, ``q= e``) share one cached response; what
differs (a next-page cursor signed for the spelling, an invalid ``q``) is never shared."""

from __future__ import annotations

from typing import Any

from quart import Quart

from api.http.response_cache import ResponseCache
from tests.fixtures.orgs import OrgClient


def response_cache(app: Quart) -> ResponseCache:
    cache: ResponseCache | None = app.extensions["tenancy"].cache
    assert cache is not None and cache.enabled
    return cache


async def listed(org: OrgClient, path: str, query: dict[str, Any]) -> tuple[int, Any]:
    r = await org.get(path, query=query, scope="read")
    return r.status_code, await r.get_json()


async def test_equivalent_searches_share_one_cached_response(app: Quart, org: OrgClient) -> None:
    for name in ("Exam rules", "Exit plan", "Other"):
        assert (await org.post("/categories", json={"name": name})).status_code == 201
    cache = response_cache(app)
    status, first = await listed(org, "/categories", {"q": "e!", "limit": 10})
    assert status == 200 and len(first["data"]) == 2
    for query in ({"q": "E", "limit": 10}, {"limit": 10, "q": " e "}, {"q": "é", "limit": 10}):
        hits = cache.hits
        status, body = await listed(org, "/categories", query)
        assert status == 200
        assert body == first
        assert cache.hits == hits + 1, f"{query} was not served from the cache"


async def test_a_search_question_list_is_shared_too(app: Quart, org: OrgClient) -> None:
    category = (await (await org.post("/categories", json={"name": "Billing"})).get_json())["data"]
    r = await org.post(
        "/questions",
        json={
            "title": "How do refunds work?",
            "answer": "Ask.",
            "categoryId": category["id"],
            "status": "published",
        },
    )
    assert r.status_code == 201, await r.get_data()
    cache = response_cache(app)
    status, first = await listed(org, "/questions", {"q": "Refund!", "limit": 5})
    assert status == 200 and len(first["data"]) == 1
    hits = cache.hits
    status, body = await listed(org, "/questions", {"limit": 5, "q": "refund"})
    assert (status, body) == (200, first)
    assert cache.hits == hits + 1


async def test_a_page_with_a_next_cursor_is_not_shared_across_spellings(
    app: Quart, org: OrgClient
) -> None:
    """A next-page cursor is signed for the list it came from (its ``q`` as spelled): each
    spelling gets a cursor that works with it."""
    for name in ("Alpha one", "Alpha two", "Alpha three"):
        assert (await org.post("/categories", json={"name": name})).status_code == 201
    seen: set[str] = set()
    for q in ("alpha!", "ALPHA", "alpha!"):
        status, page = await listed(org, "/categories", {"q": q, "limit": 2})
        assert status == 200 and page["meta"]["pagination"]["hasMore"]
        cursor = page["meta"]["pagination"]["cursor"]
        status, rest = await listed(org, "/categories", {"q": q, "limit": 2, "cursor": cursor})
        assert status == 200, rest
        seen |= {c["id"] for c in page["data"] + rest["data"]}
    assert len(seen) == 3


async def test_an_invalid_search_is_refused_even_when_its_words_are_cached(
    app: Quart, org: OrgClient
) -> None:
    assert (await org.post("/categories", json={"name": "Long names"})).status_code == 201
    status, _ = await listed(org, "/categories", {"q": "long"})
    assert status == 200
    status, body = await listed(org, "/categories", {"q": "long" + "!" * 300})
    assert status == 400
    assert body["error"]["code"] == "validation_failed"
