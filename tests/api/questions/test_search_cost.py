"""A one-letter search stays cheap: a one-letter word still prefix-matches (what someone
typing expects), but its matches (nearly every question of a large org) are not ranked: they
come in the list's order (``order``, then id), so PostgreSQL can stop at the page's end
instead of ranking and sorting every match. Searches with a longer word keep the ranking."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.questions.helpers import create, default_category
from tests.fixtures.orgs import OrgClient


async def walk(org: OrgClient, q: str, limit: int = 2) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        query: dict[str, Any] = {"q": q, "limit": limit}
        if cursor:
            query["cursor"] = cursor
        r = await org.get("/questions", query=query, scope="read")
        assert r.status_code == 200, await r.get_json()
        body = await r.get_json()
        ids += [item["id"] for item in body["data"]]
        cursor = body["meta"]["pagination"]["cursor"]
        if not cursor:
            return ids


async def test_a_one_letter_search_lists_its_matches_in_the_list_order(org: OrgClient) -> None:
    category_id = await default_category(org)
    answer_only = await create(org, category_id, title="Billing", answer="How to pay.")
    title = await create(org, category_id, title="How do I pay?", answer="With a card.")
    other = await create(org, category_id, title="Hello there", answer="Greetings.")
    await create(org, category_id, title="Nothing else", answer="At all.")
    expected = [answer_only["id"], title["id"], other["id"]]  # creation order is list order
    assert await walk(org, "h") == expected
    assert await walk(org, "H") == expected
    assert await walk(org, "h", limit=100) == expected
    # A longer word keeps the ranking: the title match comes before the answer-only match.
    assert await walk(org, "ho") == [title["id"], answer_only["id"]]


async def test_sparse_matches_beyond_the_window_are_found_in_order(
    org: OrgClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few matches spread over a long list: the page is completed from the search index, in
    the list's order, and the cursor walks every match exactly once."""
    import api.questions.queries as queries

    monkeypatch.setattr(queries, "UNRANKED_WINDOW", 3)
    category_id = await default_category(org)
    titles = ["Zebra one", "Other", "Other", "Other", "Zoo", "Other", "Zinc", "Zero", "Other"]
    created = [await create(org, category_id, title=t) for t in titles]
    expected = [q["id"] for q, t in zip(created, titles, strict=True) if t.startswith("Z")]
    for limit in (1, 2, 3, 100):
        assert await walk(org, "z", limit=limit) == expected
    assert await walk(org, "y") == []
