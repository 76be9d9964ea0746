"""Embeddings written off the request path (issue 28): a question created, changed, translated
or deleted through the API is relayed by the outbox relay, which queues
``embeddings.embed_questions`` after its commit; the actor writes (or removes) the vectors.
Also the backfill (``faq embeddings backfill``) and a model change."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers.embedder import WORDLLAMA_MODEL
from api.answers.embedding_text import content_hash, embedding_text
from api.answers.multilingual import MULTILINGUAL_MODEL
from api.answers.openai_embedder import OpenAIEmbedder
from api.answers.query_embeddings import embed_query
from api.answers.vectors import nearest
from tasks.embeddings import EMBED_ACTOR, backfill_org, embed_org_questions, embed_questions_actor
from tasks.embeddings import QUEUE as EMBEDDINGS_QUEUE
from tasks.relay import relay_org
from tenancy.db import tenant_session
from tests.api.answers.embeddings_server import API_KEY, EmbeddingsServer
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient
from tests.fixtures.queues import take_queued

pytestmark = pytest.mark.slow


async def stored(engine: AsyncEngine, org: OrgClient) -> dict[tuple[str, str, str], str]:
    """(question id, locale, model) -> content hash of the org's embeddings."""
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(
            text(
                "SELECT question_id, locale, model, content_hash, dimensions,"
                " public.vector_dims(embedding) AS dims FROM question_embeddings"
            )
        )
        result = {}
        for row in rows:
            assert row.dimensions == row.dims
            result[(row.question_id, row.locale, row.model)] = row.content_hash
        return result


def queued_embeddings(org: OrgClient) -> list[list[str]]:
    """The question ids of every ``embeddings.embed_questions`` message queued for the org
    (taken off the queue: this test runs them itself, as the worker would)."""
    return [args[1] for args in take_queued(org.info.id, EMBED_ACTOR, EMBEDDINGS_QUEUE)]


async def relay_and_embed(engine: AsyncEngine, org: OrgClient) -> list[list[str]]:
    """What the worker does after a change: relay the outbox, run the queued messages."""
    await relay_org(engine, org.info.id)
    batches = queued_embeddings(org)
    for question_ids in batches:
        await embed_questions_actor(org.info.id, question_ids)
    return batches


async def test_the_relay_queues_the_actor_which_follows_each_change(
    engine: AsyncEngine, org: OrgClient
) -> None:
    q = await create(org, title="What is your refund policy?", answer="Paid within 30 days.")
    assert await stored(engine, org) == {}  # nothing on the request's path
    assert await relay_and_embed(engine, org) == [[q["id"]]]
    first = await stored(engine, org)
    # Both models of /answers' semantic leg (api.answers.multilingual.embedders).
    assert set(first) == {(q["id"], "en", WORDLLAMA_MODEL), (q["id"], "en", MULTILINGUAL_MODEL)}

    r = await org.patch(f"/questions/{q['id']}", json={"title": "How do refunds work?"})
    assert r.status_code == 200
    assert await relay_and_embed(engine, org) == [[q["id"]]]
    second = await stored(engine, org)
    assert second.keys() == first.keys() and second != first

    # Same text: nothing is embedded again.
    r = await org.patch(f"/questions/{q['id']}", json={"status": "published"})
    assert r.status_code == 200
    await relay_org(engine, org.info.id)
    assert queued_embeddings(org) == [[q["id"]]]
    counts = await embed_org_questions(engine, org.info.id, [q["id"]])
    assert (counts.embedded, counts.unchanged, counts.deleted) == (0, 2, 0)
    assert await stored(engine, org) == second

    assert (await org.delete(f"/questions/{q['id']}")).status_code == 204
    assert await relay_and_embed(engine, org) == [[q["id"]]]
    assert await stored(engine, org) == {}


async def test_the_english_model_embeds_english_and_the_multilingual_one_every_locale(
    engine: AsyncEngine, org: OrgClient
) -> None:
    assert (await org.patch("/settings", json={"locales": ["en", "de"]})).status_code == 200
    q = await create(org, title="What is your refund policy?", answer="Paid within 30 days.")
    r = await org.request(
        "PUT",
        f"/questions/{q['id']}/translations/de",
        json={"title": "Wie erstatten Sie Geld?", "answer": "Innerhalb von 30 Tagen."},
        scope="write",
    )
    assert r.status_code == 201, await r.get_json()
    await relay_and_embed(engine, org)
    # WordLlama: English only; the multilingual model: the question's own text and the
    # translation (German readers' semantic leg, issue 38).
    assert set(await stored(engine, org)) == {
        (q["id"], "en", WORDLLAMA_MODEL),
        (q["id"], "en", MULTILINGUAL_MODEL),
        (q["id"], "de", MULTILINGUAL_MODEL),
    }


@pytest.fixture
async def endpoint() -> AsyncIterator[EmbeddingsServer]:
    server = await EmbeddingsServer().start()
    yield server
    await server.stop()


async def test_a_model_change_is_backfilled_then_the_old_vectors_go(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient, endpoint: EmbeddingsServer
) -> None:
    assert (await org.patch("/settings", json={"locales": ["en", "de"]})).status_code == 200
    made = [
        await create(org, title=f"Question {i} about refunds", answer="Paid.", status="published")
        for i in range(5)
    ]
    r = await org.request(
        "PUT",
        f"/questions/{made[0]['id']}/translations/de",
        json={"title": "Wie erstatten Sie Geld?", "answer": "Bald.", "status": "published"},
        scope="write",
    )
    assert r.status_code == 201, await r.get_json()
    theirs = await create(other_org, title="Their refunds", answer="Paid.")
    # WordLlama: English only (5); the multilingual model: every text (5 + the translation).
    assert (await backfill_org(engine, org.info.id)).embedded == 11

    new_model = OpenAIEmbedder(
        url=endpoint.url, model="test-embed-256", dimensions=256, api_key=API_KEY, batch_size=4
    )
    try:
        counts = await backfill_org(engine, org.info.id, new_model)
        again = await backfill_org(engine, org.info.id, new_model)
        vector = await embed_query("Wie erstatten Sie Geld?", new_model)
    finally:
        await new_model.aclose()
    # The German translation too; WordLlama's 5 go, the multilingual model's 6 stay unchanged.
    assert (counts.embedded, counts.unchanged, counts.deleted) == (6, 6, 5)
    assert (again.embedded, again.unchanged, again.deleted) == (0, 12, 0)
    rows = await stored(engine, org)
    assert {model for _, _, model in rows} == {"test-embed-256", MULTILINGUAL_MODEL}
    assert {(qid, loc) for qid, loc, model in rows if model == "test-embed-256"} == {
        (q["id"], "en") for q in made
    } | {(made[0]["id"], "de")}
    assert max(len(r["input"]) for r in endpoint.requests) == 4  # batches of 4
    async with tenant_session(engine, org.info.schema_name) as session:
        found = await nearest(
            session,
            vector,
            locale="de",
            limit=3,
            published_only=True,
            category_ids=None,
            model="test-embed-256",
        )
    assert [qid for qid, _ in found] == [made[0]["id"]]
    assert await stored(engine, other_org) == {}  # the other org was not touched
    assert theirs["id"] not in {qid for qid, _, _ in rows}


async def test_vectors_of_an_earlier_recipe_are_written_again_by_the_backfill(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = [
        await create(org, title=f"Refund question {i}", answer="Paid back in 5 days. " * 20)
        for i in range(2)
    ]
    assert (await backfill_org(engine, org.info.id)).embedded == 4  # two models
    texts = {q["id"]: embedding_text(q["title"], q["answer"]) for q in made}
    async with tenant_session(engine, org.info.schema_name) as session:
        for qid, body in texts.items():  # as the recipe before it had its name in the hash
            old = hashlib.sha256(body.encode()).hexdigest()
            await session.execute(
                text("UPDATE question_embeddings SET content_hash = :h WHERE question_id = :q"),
                {"h": old, "q": qid},
            )
        await session.commit()
    counts = await backfill_org(engine, org.info.id)
    assert (counts.embedded, counts.unchanged, counts.deleted) == (4, 0, 0)
    assert set((await stored(engine, org)).values()) == {content_hash(t) for t in texts.values()}
    assert (await backfill_org(engine, org.info.id)).unchanged == 4


async def test_the_backfill_command_embeds_what_exists(engine: AsyncEngine, org: OrgClient) -> None:
    made = [await create(org, title=f"Refund question {i}", answer="Yes.") for i in range(3)]

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tasks.cli", "embeddings", "backfill", org.slug],
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    assert run() == f"{org.slug}: 6 embedded, 0 unchanged, 0 removed"  # two models
    assert {qid for qid, _, _ in await stored(engine, org)} == {q["id"] for q in made}
    assert run() == f"{org.slug}: 0 embedded, 6 unchanged, 0 removed"
    missing = subprocess.run(
        [sys.executable, "-m", "tasks.cli", "embeddings", "backfill", "no-such-org-x"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 1 and "no org" in missing.stderr
