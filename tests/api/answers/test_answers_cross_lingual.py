"""The cross-lingual leg of ``/answers`` (issue 38), from outside: an English org that also
serves French and Arabic, a question with no translation, and a reader asking in French or
Arabic with no word in common finds it by meaning (the multilingual embedder's vectors,
written by the worker for every org). In an org whose language WordLlama does not embed, that
model is the semantic leg alone: a French or Arabic reader finds by meaning in their own
language too."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers.cross_lingual import CrossLingualLeg
from api.answers.multilingual import MULTILINGUAL_MODEL
from tasks.embeddings import (
    EMBED_ACTOR,
    backfill_org,
    embed_org_questions,
    embed_questions_actor,
)
from tasks.embeddings import (
    QUEUE as EMBEDDINGS_QUEUE,
)
from tasks.relay import relay_org
from tenancy.db import tenant_session
from tests.api.answers.test_answers_languages import answers, publish, serve, translate
from tests.api.questions.helpers import default_category
from tests.fixtures.orgs import OrgClient
from tests.fixtures.queues import take_queued

REFUND = ("How do I get a refund?", "Refunds are paid within 30 days, to the card you used.")
PASSWORD = ("How do I reset my password?", "Use the Forgot password link on the sign-in page.")
INVITE = ("How do I invite teammates?", "Open Members and send each of them an invitation.")


async def models_of(engine: AsyncEngine, org: OrgClient) -> dict[str, set[tuple[str, str]]]:
    """model -> {(question id, locale)} of the org's stored vectors."""
    found: dict[str, set[tuple[str, str]]] = {}
    async with tenant_session(engine, org.info.schema_name) as session:
        for row in await session.execute(
            text("SELECT question_id, locale, model FROM question_embeddings")
        ):
            found.setdefault(row.model, set()).add((row.question_id, row.locale))
    return found


async def help_center(org: OrgClient, locales: list[str]) -> dict[str, dict[str, Any]]:
    category = await serve(org, locales, "en")
    return {
        name: await publish(org, category, *texts)
        for name, texts in (("refund", REFUND), ("password", PASSWORD), ("invite", INVITE))
    }


def ids(found: list[dict[str, Any]]) -> list[str]:
    return [a["question"]["id"] for a in found]


async def test_a_french_or_arabic_reader_finds_an_untranslated_question_by_meaning(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = await help_center(org, ["en", "fr", "ar"])
    # No word in common: lexically nothing (the fallback matches words, not meaning).
    assert made["refund"]["id"] not in ids(await answers(org, "comment me faire rembourser", "fr"))

    await embed_org_questions(engine, org.info.id, [q["id"] for q in made.values()])
    stored = await models_of(engine, org)
    # Of each question's own text only (English), beside WordLlama's.
    assert stored[MULTILINGUAL_MODEL] == {(q["id"], "en") for q in made.values()}
    assert len(stored) == 2

    found = await answers(org, "comment me faire rembourser", "fr")
    assert ids(found)[:1] == [made["refund"]["id"]], found
    assert found[0]["question"]["locale"] == "en"  # served in its own language
    assert found[0]["question"]["title"] == REFUND[0]
    # "How can I get my money back?" (the shorter "كيف أسترد أموالي" is not: USE puts
    # it as near the password question as the refund one, docs/answers.md).
    found = await answers(org, "كيف يمكنني استرداد أموالي", "ar")
    assert ids(found)[:1] == [made["refund"]["id"]], found
    found = await answers(org, "j'ai oublié mon mot de passe", "fr")
    assert ids(found)[:1] == [made["password"]["id"]], found


HOUSE_RULES = (
    "Set house rules",
    "In your listing settings, add rules such as no smoking, no parties or quiet hours. Guests"
    " must agree to your house rules before booking. If a guest doesn't follow them, you can"
    " report it to us.",
)


async def test_a_short_query_in_another_language_finds_its_weak_but_best_match(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """Short support queries get low cosines across languages: "no smoking in my place" finds
    "Set house rules" (blind held-out set B, hb-035) at a cosine near 0.3, under English's
    floor of 0.25 on the score (a cosine of 0.36), which left French and Arabic readers with
    nothing. The leg's own floor keeps it, first, and not vouched for; a query about nothing
    the org has stays without results."""
    made = await help_center(org, ["en", "fr", "ar"])
    rules = await publish(org, await default_category(org), *HOUSE_RULES)
    await embed_org_questions(engine, org.info.id, [rules["id"], *(q["id"] for q in made.values())])
    for query, locale in (("interdit de fumer chez moi", "fr"), ("ممنوع التدخين داخل مسكني", "ar")):
        found = await answers(org, query, locale)
        assert ids(found)[:1] == [rules["id"]], (locale, found)
        assert found[0]["confident"] is False and found[0]["score"] < 0.25, found[0]
    # Nothing relevant is still nothing, not noise, in another language too.
    for query, locale in (
        ("meilleure recette de pizza à la mozzarella", "fr"),
        ("أفضل وصفة بيتزا بالموزاريلا", "ar"),
    ):
        assert await answers(org, query, locale) == [], (locale, query)


async def test_a_translated_question_is_left_to_the_readers_language(
    engine: AsyncEngine, org: OrgClient
) -> None:
    made = await help_center(org, ["en", "fr"])
    await translate(
        org,
        made["password"]["id"],
        "fr",
        "Comment réinitialiser mon mot de passe ?",
        "Utilisez le lien Mot de passe oublié.",
    )
    await embed_org_questions(engine, org.info.id, [q["id"] for q in made.values()])
    async with tenant_session(engine, org.info.schema_name) as session:
        leg = CrossLingualLeg(session, "fr")
        every = [q["id"] for q in made.values()]
        near = await leg.scores("j'ai oublié mon mot de passe", None, every)
        assert near is not None and made["password"]["id"] not in near
        assert made["refund"]["id"] in near
        # An English reader's own language: nothing to cross.
        english = await CrossLingualLeg(session, "en").scores("forgot my password", None, every)
        assert english == {}
    found = await answers(org, "j'ai oublié mon mot de passe", "fr")
    assert ids(found)[:1] == [made["password"]["id"]]
    assert found[0]["question"]["locale"] == "fr"  # found and served in French


async def test_the_backfill_writes_both_models_vectors_whatever_the_orgs_languages(
    engine: AsyncEngine, org: OrgClient
) -> None:
    category = await default_category(org)  # English only
    made = [await publish(org, category, *texts) for texts in (REFUND, PASSWORD, INVITE)]
    counts = await backfill_org(engine, org.info.id)
    assert counts.embedded == 2 * len(made)  # WordLlama's and the multilingual model's
    assert set(await models_of(engine, org)) == {"wordllama-l2_supercat-256", MULTILINGUAL_MODEL}
    again = await backfill_org(engine, org.info.id)
    assert (again.embedded, again.unchanged, again.deleted) == (0, 2 * len(made), 0)


FRENCH = {
    "refund": (
        "Comment obtenir un remboursement ?",
        "Les remboursements sont versés sous 30 jours, sur la carte utilisée.",
    ),
    "password": (
        "Comment réinitialiser mon mot de passe ?",
        "Utilisez le lien Mot de passe oublié sur la page de connexion.",
    ),
    "invite": (
        "Comment inviter mes collègues ?",
        "Ouvrez Membres et envoyez une invitation à chacun.",
    ),
}


async def test_a_french_org_finds_by_meaning_in_french(engine: AsyncEngine, org: OrgClient) -> None:
    """WordLlama embeds English only: a French org's semantic leg is the multilingual model
    alone (its own floor, ``ranking.MULTILINGUAL``). Before, a French reader with no word in
    common with the FAQ got nothing."""
    category = await serve(org, ["fr"], "fr")
    made = {name: await publish(org, category, *texts) for name, texts in FRENCH.items()}
    # The support lexicon's groups of these words off: meaning does the work.
    off = {"disabled": ["refund", "password", "sign-in"]}
    assert (await org.request("PUT", "/synonyms/lexicon", json=off)).status_code == 200
    query = "je veux récupérer mon argent"
    assert await answers(org, query, "fr") == []  # no word in common, no vectors yet
    await embed_org_questions(engine, org.info.id, [q["id"] for q in made.values()])
    stored = await models_of(engine, org)
    assert stored == {MULTILINGUAL_MODEL: {(q["id"], "fr") for q in made.values()}}
    found = await answers(org, query, "fr")
    assert ids(found)[:1] == [made["refund"]["id"]], found
    assert found[0]["question"]["locale"] == "fr"
    found = await answers(org, "je ne peux plus accéder à mon compte", "fr")
    assert ids(found)[:1] == [made["password"]["id"]], found
    found = await answers(org, "faire venir mon équipe", "fr")
    assert ids(found)[:1] == [made["invite"]["id"]], found
    assert await answers(org, "meilleure recette de pizza", "fr") == []


async def test_a_published_question_gets_both_models_vectors_from_the_relay(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """No backfill is needed for a second language: every org's questions have the
    multilingual vectors from the start."""
    refund = await publish(org, await default_category(org), *REFUND)
    await relay_org(engine, org.info.id)
    for _, question_ids in take_queued(org.info.id, EMBED_ACTOR, EMBEDDINGS_QUEUE):
        await embed_questions_actor(org.info.id, question_ids)
    assert (await models_of(engine, org))[MULTILINGUAL_MODEL] == {(refund["id"], "en")}

    await serve(org, ["en", "fr"], "en")
    await relay_org(engine, org.info.id)
    found = await answers(org, "comment me faire rembourser", "fr")
    assert ids(found)[:1] == [refund["id"]]
