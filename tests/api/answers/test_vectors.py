"""``nearest`` and ``similar_to`` (issue 28): questions embedded by the actor's code, found by
meaning through the HNSW index, within the bound org only."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers.query_embeddings import embed_query
from api.answers.vectors import nearest, similar_to
from tasks.embeddings import embed_org_questions
from tenancy.db import read_records, tenant_session
from tests.api.questions.helpers import create, default_category
from tests.fixtures.orgs import OrgClient

FAQ = [
    ("What is your refund policy?", "Refunds are paid within 30 days of a purchase."),
    ("How do I reset my password?", "Use the **Forgot password** link on the sign-in page."),
    ("Which payment methods do you accept?", "Cards, bank transfers and PayPal."),
    ("How do I delete my account?", "Open the settings and choose Delete account."),
    ("Can I change my shipping address?", "Yes, until the parcel leaves our warehouse."),
]
REFUND = FAQ[0][0]


async def seeded(
    engine: AsyncEngine, org: OrgClient, faq: list[tuple[str, str]] = FAQ, **fields: Any
) -> dict[str, str]:
    """The FAQ created through the API and embedded: title -> question id."""
    category = await default_category(org)
    made = {}
    for title, answer in faq:
        fields.setdefault("status", "published")
        made[title] = (await create(org, category, title=title, answer=answer, **fields))["id"]
    counts = await embed_org_questions(engine, org.info.id, list(made.values()))
    assert counts.embedded == 2 * len(faq)  # WordLlama and the multilingual model
    return made


async def nearest_in(
    engine: AsyncEngine, org: OrgClient, query: str, **options: Any
) -> list[tuple[str, float]]:
    vector = await embed_query(query)
    options = {"locale": "en", "limit": 5, "published_only": True, "category_ids": None, **options}
    async with tenant_session(engine, org.info.schema_name) as session:
        return await nearest(session, vector, **options)


async def model_nearest(
    session: AsyncSession, vector: list[float], model: str
) -> list[tuple[str, float]]:
    """The 5 nearest published questions in English by ``model``'s vectors."""
    return await nearest(
        session, vector, locale="en", limit=5, published_only=True, category_ids=None, model=model
    )


async def test_a_paraphrase_finds_its_question_first(engine: AsyncEngine, org: OrgClient) -> None:
    made = await seeded(engine, org)
    found = await nearest_in(engine, org, "how do I get my money back?")
    assert found[0][0] == made[REFUND]
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1
    assert len(found) == len(FAQ)
    assert (await nearest_in(engine, org, "forgot my login password"))[0][0] == made[FAQ[1][0]]


async def test_another_orgs_embeddings_are_never_returned(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    theirs = await seeded(engine, other_org, FAQ[:1])
    ours = await seeded(engine, org, FAQ[1:2])
    found = await nearest_in(engine, org, "how do I get my money back?")
    assert [qid for qid, _ in found] == [ours[FAQ[1][0]]]
    async with tenant_session(engine, org.info.schema_name) as session:
        assert await similar_to(session, theirs[REFUND], "en", 5) == []


async def test_drafts_deleted_and_other_categories_are_left_out(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = await seeded(engine, org)
    draft = await seeded(
        engine, org, [("Can I get a refund after 30 days?", "Rarely.")], status="draft"
    )
    r = await org.post("/categories", json={"name": "Billing"})
    billing = (await r.get_json())["data"]["id"]
    r = await org.patch(f"/questions/{made[FAQ[2][0]]}", json={"categoryId": billing})
    assert r.status_code == 200, await r.get_json()

    found = [qid for qid, _ in await nearest_in(engine, org, "refund")]
    assert draft["Can I get a refund after 30 days?"] not in found
    everything = [qid for qid, _ in await nearest_in(engine, org, "refund", published_only=False)]
    assert draft["Can I get a refund after 30 days?"] in everything
    in_billing = await nearest_in(engine, org, "refund", category_ids=[billing])
    assert [qid for qid, _ in in_billing] == [made[FAQ[2][0]]]
    assert await nearest_in(engine, org, "refund", category_ids=[]) == []

    assert (await org.delete(f"/questions/{made[REFUND]}")).status_code == 204
    found = [qid for qid, _ in await nearest_in(engine, org, "how do I get my money back?")]
    assert made[REFUND] not in found  # gone at once, before its embedding is removed
    assert await nearest_in(engine, org, "refund", locale="de") == []


async def test_similar_questions_are_the_nearest_others(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = await seeded(engine, org)
    duplicate = await seeded(
        engine, org, [("How can I get a refund?", "Ask within 30 days.")], status="draft"
    )
    async with tenant_session(engine, org.info.schema_name) as session:
        similar = await similar_to(session, made[REFUND], "en", 3)
    assert similar[0][0] == duplicate["How can I get a refund?"]  # drafts too: for editors
    assert made[REFUND] not in [qid for qid, _ in similar] and len(similar) == 3


async def test_the_query_is_served_by_the_hnsw_index(engine: AsyncEngine, org: OrgClient) -> None:
    """With few rows the planner may scan; with scans priced out it must be able to use the
    partial HNSW index, i.e. the query's cast and filter match the index."""
    await seeded(engine, org, FAQ[:2])
    from api.answers.embedder import configured_model_name
    from api.answers.vectors import _nearest_sql, vector_literal

    vector = await embed_query("refund")
    statement = _nearest_sql(len(vector), True, False)
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(text("SET LOCAL enable_seqscan = off"))
        await session.execute(text("SET LOCAL enable_sort = off"))
        args = (vector_literal(vector), configured_model_name(), "en", 5)
        plan = "\n".join(
            row[0] for row in await read_records(session, f"EXPLAIN {statement}", *args)
        )
    assert "ix_question_embeddings_hnsw_256" in plan, plan


async def test_both_models_are_read_in_one_statement_each_by_its_own_index(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """The semantic leg asks both models' nearest questions in one statement (one round
    trip); each branch must still match its model's partial HNSW index, with a category
    filter too, and the statement finds what each model's own statement finds."""
    await seeded(engine, org, FAQ[:2])
    from api.answers.embedder import configured_model_name
    from api.answers.multilingual import MULTILINGUAL_MODEL, current_multilingual
    from api.answers.vectors import nearest_of_models, nearest_statement

    asked = [
        (configured_model_name(), await embed_query("refund")),
        (MULTILINGUAL_MODEL, await embed_query("refund", current_multilingual())),
    ]
    async with tenant_session(engine, org.info.schema_name) as session:
        for categories in (None, ["cat_none"]):
            sql, args = nearest_statement(asked, "en", 5, True, categories)
            await session.execute(text("SET LOCAL enable_seqscan = off"))
            await session.execute(text("SET LOCAL enable_sort = off"))
            plan = "\n".join(row[0] for row in await read_records(session, f"EXPLAIN {sql}", *args))
            assert "ix_question_embeddings_hnsw_256" in plan, plan
            assert "ix_question_embeddings_hnsw_512" in plan, plan
        await session.rollback()
        together = await nearest_of_models(
            session, asked, locale="en", limit=5, published_only=True, category_ids=None
        )
        for model, vector in asked:
            alone = await model_nearest(session, vector, model)
            assert alone and together[model] == alone


async def test_a_wide_search_opens_no_transaction_and_widens_the_candidates(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """Asked for 50 (``hnsw.ef_search`` widened to 200), outside a transaction the search
    runs on the read pool, whose connection keeps the setting: no primary-pool transaction
    is opened for it, and the answer is the one a transaction gets."""
    await seeded(engine, org)
    vector = await embed_query("refund")
    async with tenant_session(engine, org.info.schema_name) as session:
        pooled = await nearest(
            session, vector, locale="en", limit=50, published_only=True, category_ids=None
        )
        assert not session.in_transaction()
        shown = await read_records(session, "SELECT current_setting('hnsw.ef_search', true)")
        assert shown[0][0] == "200"  # kept by the read pool's connection
        await session.execute(text("SELECT 1"))  # now in a transaction: SET LOCAL
        in_transaction = await nearest(
            session, vector, locale="en", limit=50, published_only=True, category_ids=None
        )
    assert pooled == in_transaction and len(pooled) == len(FAQ)


async def test_in_english_only_wordllama_searches_and_the_multilingual_model_rescores(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """Where WordLlama embeds, the leg reads the index with it alone; the multilingual model's
    cosines come for the candidates only, and each candidate's cosine is still the mean of
    both models' (as each model's own search scores it). Where WordLlama does not embed, the
    multilingual model searches."""
    from api.answers.embedder import configured_model_name
    from api.answers.multilingual import MULTILINGUAL_MODEL, current_multilingual
    from api.answers.semantic_leg import EmbeddingsLeg

    made = await seeded(engine, org)
    typed = "how do I get my money back?"
    async with tenant_session(engine, org.info.schema_name) as session:
        leg = EmbeddingsLeg(session, "en")
        assert [(m.name, m.searches) for m in leg.models] == [
            (configured_model_name(), True),
            (MULTILINGUAL_MODEL, False),
        ]
        leg.start(typed)
        near = await leg.nearest("how do i get my money back", None, typed)
        wordllama, use = leg.models
        assert near is not None and set(near) == set(made.values())
        assert set(wordllama.found) == set(made.values())
        assert use.found == {}  # no search of its own
        blended = await leg.cosines([])
        assert set(use.found) == set(made.values())
        own: dict[str, dict[str, float]] = {}
        for name, vector in (
            (configured_model_name(), await embed_query("how do i get my money back")),
            (MULTILINGUAL_MODEL, await embed_query(typed, current_multilingual())),
        ):
            own[name] = dict(await model_nearest(session, vector, name))
        for question_id, cosine in blended.items():
            mean = (
                own[configured_model_name()][question_id] + own[MULTILINGUAL_MODEL][question_id]
            ) / 2
            assert abs(cosine - mean) < 1e-5
        assert max(blended, key=blended.__getitem__) == made[REFUND]

        french = EmbeddingsLeg(session, "fr")
        assert [(m.name, m.searches) for m in french.models] == [(MULTILINGUAL_MODEL, True)]
