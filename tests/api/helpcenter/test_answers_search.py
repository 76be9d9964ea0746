"""The help center searches with ``/answers``' ranking (issue 28): a question in other words
finds its answer, with a snippet; question pages show related questions."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers.multilingual import embedders
from api.answers.vector_store import embed_questions
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient


async def page(org: OrgClient, path: str) -> tuple[int, str]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, (await r.get_data()).decode()


async def test_search_finds_by_meaning_with_synonyms_and_snippets(
    engine: AsyncEngine, org: OrgClient
) -> None:
    refund = await question(org, "What is your refund policy?", "Refunds are paid in 30 days.")
    password = await question(org, "How do I reset my password?", "Use the sign-in page.")
    gift = await question(org, "Refund policy for gift cards", "Gift cards are not refunded.")
    await enable(org)
    # The support lexicon's groups of these words off: the semantic leg and the org's own
    # synonyms do the work (the lexicon: tests/api/answers/test_support_lexicon.py).
    off = {"disabled": ["refund", "password"]}
    assert (await org.request("PUT", "/synonyms/lexicon", json=off)).status_code == 200
    status, body = await page(org, "/en/search?q=how+do+I+get+my+money+back")
    assert status == 200 and "What is your refund policy?" not in body  # no vector yet
    ids = [refund["id"], password["id"], gift["id"]]
    await embed_questions(engine, org.info.schema_name, ids, embedders())
    r = await org.request("PUT", "/synonyms", json={"groups": [["passcode", "password"]]})
    assert r.status_code == 200
    status, body = await page(org, "/en/search?q=how+do+I+get+my+money+back")
    assert status == 200 and "What is your refund policy?" in body
    status, body = await page(org, "/en/search?q=pasword+reset")  # a typo
    assert '<p class="snippet" dir="auto">' in body
    assert "How do I reset my password?" in body
    status, body = await page(org, "/en/search?q=forgot+my+passcode")  # a synonym
    assert "How do I reset my password?" in body
    status, body = await page(org, "/en/search?q=refunds")
    assert "<mark>Refunds</mark> are paid in 30 days." in body
    status, body = await page(org, f"/en/questions/{refund['slug']}")
    related = body.split('id="related-title"', 1)[1]
    assert "Refund policy for gift cards" in related
    assert "What is your refund policy?" not in related  # never itself
