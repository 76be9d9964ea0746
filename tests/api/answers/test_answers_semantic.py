"""``/answers`` by meaning: the embedded default model (WordLlama, from its wheel) and pgvector,
the questions embedded as the worker does it (``api.answers.vector_store``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers.multilingual import embedders
from api.answers.vector_store import embed_questions
from tests.api.answers.test_answers import FAQ, answers, seed, titles
from tests.api.questions.helpers import create, default_category
from tests.fixtures.orgs import OrgClient


async def embedded(engine: AsyncEngine, org: OrgClient, made: dict[str, dict[str, Any]]) -> None:
    ids = [q["id"] for q in made.values()]
    counts = await embed_questions(engine, org.info.schema_name, ids, embedders())
    assert counts.embedded == 2 * len(ids)  # WordLlama and the multilingual model


async def test_a_question_in_other_words_finds_its_answer(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = await seed(org)
    # The support lexicon's groups of these words off: the semantic leg does the work.
    off = {"disabled": ["refund", "password", "sign-in", "payment-method"]}
    assert (await org.request("PUT", "/synonyms/lexicon", json=off)).status_code == 200
    status, body = await answers(org, q="how do I get my money back?")
    assert "What is your refund policy?" not in titles(body)  # no shared word: lexically lost
    await embedded(engine, org, made)
    for q, expected in (
        ("how do I get my money back?", "What is your refund policy?"),
        ("I forgot my login credentials", "How do I reset my password?"),
        ("can I pay with a credit card", "Which payment methods do you accept?"),
        ("where do I change the delivery destination", "Can I change my shipping address?"),
    ):
        status, body = await answers(org, q=q)
        assert status == 200 and titles(body)[:1] == [expected], (q, body)
        assert body["data"][0]["score"] > body["data"][-1]["score"] or len(body["data"]) == 1


async def test_confident_only_when_the_first_answer_clearly_fits(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = await seed(org)
    await embedded(engine, org, made)
    _, body = await answers(org, q="what is the refund policy?")
    assert body["data"][0]["confident"] is True
    _, body = await answers(org, q="what is the weather in Paris tomorrow?")
    assert all(not item["confident"] for item in body["data"]), body
    for q in ("quantum chromodynamics lecture notes", "best pizza recipe with mozzarella"):
        _, body = await answers(org, q=q)
        assert body["data"] == [], (q, body)  # nothing relevant: nothing, not noise


async def test_a_question_not_embedded_yet_is_still_found_by_its_words(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = await seed(org)
    await embedded(engine, org, made)
    late = await create(
        org,
        await default_category(org),
        title="Do you ship to Iceland?",
        answer="Yes, within ten days.",
        status="published",
    )
    _, body = await answers(org, q="shipping to iceland")
    assert titles(body)[0] == late["title"], body
    assert len(FAQ) == len(made)


async def test_similar_questions_are_likely_duplicates_of_any_status(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    made = await seed(org)
    duplicate = await create(
        org,
        await default_category(org),
        title="How can I get a refund?",
        answer="Write to us within 30 days.",
        status="draft",
    )
    await embedded(engine, org, {**made, "dup": duplicate})
    refund = made["What is your refund policy?"]
    r = await org.get(f"/questions/{refund['slug']}/similar", scope="read")
    assert r.status_code == 200, await r.get_json()
    data = (await r.get_json())["data"]
    assert data[0]["question"]["id"] == duplicate["id"]
    assert data[0]["question"]["status"] == "draft"
    assert refund["id"] not in [item["question"]["id"] for item in data]
    assert all(0 < item["score"] <= 1 for item in data)
    r = await org.get(f"/questions/{refund['id']}/similar", query={"limit": "1"}, scope="read")
    assert len((await r.get_json())["data"]) == 1
    # Another org's question is nonexistent here.
    r = await other_org.get(f"/questions/{refund['id']}/similar", scope="read")
    assert r.status_code == 404
    r = await org.get("/questions/no-such-question/similar", scope="read")
    assert r.status_code == 404


async def test_similar_falls_back_to_the_titles_words_without_embeddings(org: OrgClient) -> None:
    made = await seed(org)
    await create(
        org,
        await default_category(org),
        title="Refund policy for gift cards",
        answer="Gift cards are not refunded.",
        status="published",
    )
    refund = made["What is your refund policy?"]
    r = await org.get(f"/questions/{refund['id']}/similar", scope="read")
    titles_found = [item["question"]["title"] for item in (await r.get_json())["data"]]
    assert titles_found[0] == "Refund policy for gift cards"
