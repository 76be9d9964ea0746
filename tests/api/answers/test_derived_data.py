"""Derived data follows content, whatever its path (issue 40): after a change lands and the
relay runs (then the embedding messages it queued, as the worker does), the question's vector
is there and ``/answers`` finds it by meaning, with no ``faq embeddings backfill``: imports of
every format, translations by PUT and XLIFF, a revision restored, the publish sweep, a draft
published at once or on schedule. The answer vocabulary and the response cache see imported
content at once too. API create, PATCH and delete: ``test_embeddings_actor.py``."""

from __future__ import annotations

import asyncio
import io
import zipfile
from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.answers import vocabulary
from api.answers.embedder import WORDLLAMA_MODEL
from tasks.publishing import publish_due_questions
from tenancy.clock import iso, utcnow
from tests.api.answers.test_answers import answers, titles
from tests.api.answers.test_embeddings_actor import queued_embeddings, relay_and_embed, stored
from tests.api.exports.test_round_trip import export_bundle
from tests.api.imports.helpers import all_questions, enable_locales, fixture, outbox_events, run
from tests.api.questions.helpers import create
from tests.api.translations.test_xliff import import_file, xliff_file
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

MONEY_BACK = "how do I get my money back"  # no word of "What is your refund policy?"
REFUND = {"title": "What is your refund policy?", "answer": "Refunds are paid within 30 days."}


async def vectors(engine: AsyncEngine, org: OrgClient) -> dict[tuple[str, str], str]:
    """(question id, locale) -> content hash of the default model's vectors."""
    rows = await stored(engine, org)
    return {(q, loc): h for (q, loc, model), h in rows.items() if model == WORDLLAMA_MODEL}


async def found(org: OrgClient, q: str) -> list[str]:
    status, body = await answers(org, q=q)
    assert status == 200, body
    return titles(body)


# ---- imports ---------------------------------------------------------------------------------


async def test_an_import_is_embedded_and_found_by_meaning_with_no_backfill(
    engine: AsyncEngine, org: OrgClient
) -> None:
    """The finding: after moving from Zendesk, a paraphrase found nothing semantically."""
    paraphrase = "how can I make a payment"  # no word of "How do I pay?" and its answer
    assert await found(org, paraphrase) == []
    job = await run(engine, org, "zendesk", fixture("zendesk.json"))
    assert job["status"] == "succeeded", job
    assert await found(org, paraphrase) == []  # lexically lost
    made = {q["id"] for q in await all_questions(org)}
    # The import's webhook events are still the one ``import.completed`` (the audit stays).
    assert {e for e in await outbox_events(engine, org) if e != "audit"} == {"import.completed"}
    batches = await relay_and_embed(engine, org)
    assert batches == [sorted(made)]  # one message for the burst
    assert {q for q, _ in await vectors(engine, org)} == made
    assert await found(org, paraphrase) == ["How do I pay?"]


MARKDOWN = {
    "Billing/refunds.md": (
        "---\ntitle: What is your refund policy?\nstatus: published\n---\n"
        "Refunds are paid within 30 days.\n"
    ),
    "Billing/pay.md": "---\ntitle: How do I pay?\nstatus: published\n---\nBy **card**.\n",
}


def _zip(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return out.getvalue()


@pytest.mark.parametrize(
    "fmt",
    ["zendesk", "intercom", "helpscout", "csv", "markdown", "faq"],
)
async def test_every_import_format_is_embedded(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient, fmt: str
) -> None:
    await enable_locales(org, "fr")
    if fmt == "faq":
        await create(other_org, **REFUND, status="published")
        body = await export_bundle(engine, other_org)
    elif fmt == "markdown":
        body = _zip(MARKDOWN)
    else:
        body = fixture({"csv": "faq.csv"}.get(fmt, f"{fmt}.json"))
    job = await run(engine, org, fmt, body)
    assert job["status"] == "succeeded" and job["counts"]["created"] > 0, job
    made = await all_questions(org)
    assert made
    await relay_and_embed(engine, org)
    assert set(await vectors(engine, org)) == {(q["id"], q["locale"]) for q in made}
    if fmt in ("faq", "markdown"):
        assert (await found(org, MONEY_BACK))[:1] == [REFUND["title"]]

    # Running it again changes nothing: nothing embedded again, nothing lost.
    before = await vectors(engine, org)
    await run(engine, org, fmt, body)
    await relay_and_embed(engine, org)
    assert await vectors(engine, org) == before


async def test_a_reimport_that_changes_the_text_embeds_it_again(
    engine: AsyncEngine, org: OrgClient
) -> None:
    first = {"Billing/refunds.md": "---\ntitle: Opening hours\nstatus: published\n---\nAt nine.\n"}
    await run(engine, org, "markdown", _zip(first))
    await relay_and_embed(engine, org)
    (q,) = await all_questions(org)
    was = await vectors(engine, org)
    assert await found(org, MONEY_BACK) == []
    job = await run(engine, org, "markdown", _zip(MARKDOWN))
    assert job["counts"]["updated"] == 1, job
    await relay_and_embed(engine, org)
    now = await vectors(engine, org)
    assert now[(q["id"], "en")] != was[(q["id"], "en")]
    assert (await found(org, MONEY_BACK))[:1] == [REFUND["title"]]


async def test_imported_content_is_read_and_searched_at_once(
    engine: AsyncEngine, org: OrgClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The response cache and the answer vocabulary follow an import (its transactions bump
    the org's content generation, as any write does): a list read just before shows the
    imported questions just after, a word only the import brought ranks its question, and
    once the vocabulary is read again a typo of that word is corrected to it."""
    monkeypatch.setattr(vocabulary, "REFRESH_SECONDS", 0.0)  # refresh whenever written since
    r = await org.get("/questions")
    assert (await r.get_json())["data"] == []  # cached
    assert await found(org, "mastercard") == []  # the vocabulary read, the answer cached
    assert await found(org, "mastercrad") == []
    job = await run(engine, org, "csv", fixture("faq.csv"))
    assert job["status"] == "succeeded", job
    r = await org.get("/questions")
    assert {q["title"] for q in (await r.get_json())["data"]} == {
        "How do I reset my password?",
        "Can I export my data?",
        "Which cards do you take?",
    }
    assert (await found(org, "mastercard"))[:1] == ["Which cards do you take?"]
    await found(org, "mastercrad")  # served by the vocabulary before; its refresh starts
    for _ in range(100):
        if (await found(org, "mastercrad"))[:1] == ["Which cards do you take?"]:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the typo is never corrected to the imported word")


# ---- translations ------------------------------------------------------------------------------


async def test_translations_by_put_and_xliff_are_embedded(
    engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(org, "en-GB")
    a = await create(org, title="Opening hours", answer="We open at nine.", status="published")
    b = await create(org, title="Shop address", answer="Main street.", status="published")
    await relay_and_embed(engine, org)
    assert set(await vectors(engine, org)) == {(a["id"], "en"), (b["id"], "en")}

    r = await org.request(
        "PUT", f"/questions/{a['id']}/translations/en-GB", json=REFUND, scope="write"
    )
    assert r.status_code == 201, await r.get_json()
    body = xliff_file(
        "en-GB",
        {f"question/{b['id']}/title": "Colour options", f"question/{b['id']}/answer": "Grey."},
    )
    r = await import_file(org, body)
    assert r.status_code == 200 and (await r.get_json())["data"]["updated"] == 1
    assert await relay_and_embed(engine, org) == [sorted([a["id"], b["id"]])]
    assert set(await vectors(engine, org)) == {
        (a["id"], "en"),
        (b["id"], "en"),
        (a["id"], "en-GB"),
        (b["id"], "en-GB"),
    }
    r = await org.delete(f"/questions/{a['id']}/translations/en-GB", scope="write")
    assert r.status_code == 204
    await relay_and_embed(engine, org)
    assert (a["id"], "en-GB") not in await vectors(engine, org)


# ---- revisions, the sweep, drafts --------------------------------------------------------------


async def test_a_restored_revision_is_embedded_again(engine: AsyncEngine, org: OrgClient) -> None:
    q = await create(org, **REFUND, status="published")
    await relay_and_embed(engine, org)
    original = await vectors(engine, org)
    r = await org.patch(
        f"/questions/{q['id']}", json={"title": "Opening hours", "answer": "At nine."}
    )
    assert r.status_code == 200
    await relay_and_embed(engine, org)
    assert await vectors(engine, org) != original
    assert await found(org, MONEY_BACK) == []
    r = await org.get(f"/questions/{q['id']}/revisions")
    first = (await r.get_json())["data"][-1]
    r = await org.post(f"/questions/{q['id']}/revisions/{first['id']}/restore", scope="write")
    assert r.status_code == 200, await r.get_json()
    assert await relay_and_embed(engine, org) == [[q["id"]]]
    assert await vectors(engine, org) == original
    assert await found(org, MONEY_BACK) == [REFUND["title"]]


async def test_the_publish_sweep_makes_a_scheduled_question_found_by_meaning(
    engine: AsyncEngine, org: OrgClient
) -> None:
    at = utcnow() + timedelta(seconds=1)
    q = await create(org, **REFUND, status="scheduled", scheduledPublishAt=iso(at))
    await relay_and_embed(engine, org)
    assert set(await vectors(engine, org)) == {(q["id"], "en")}  # drafts are embedded too
    assert await found(org, MONEY_BACK) == []  # not published yet (and cached so)
    await asyncio.sleep(max(0.0, (at - utcnow()).total_seconds()) + 0.05)
    assert (await publish_due_questions(engine))["published"] >= 1
    assert await found(org, MONEY_BACK) == [REFUND["title"]]
    assert await relay_and_embed(engine, org) == [[q["id"]]]  # its text checked: unchanged
    assert set(await vectors(engine, org)) == {(q["id"], "en")}


async def test_a_published_draft_is_embedded_at_once_or_on_schedule(
    engine: AsyncEngine, org: OrgClient
) -> None:
    now = await create(org, title="Opening hours", answer="At nine.", status="published")
    later = await create(org, title="Shop address", answer="Main street.", status="published")
    await relay_and_embed(engine, org)
    before = await vectors(engine, org)

    r = await org.request("PUT", f"/questions/{now['id']}/draft", json=REFUND, scope="write")
    assert r.status_code == 200, await r.get_json()
    assert await relay_and_embed(engine, org) == []  # a draft changes no text readers see
    r = await org.post(f"/questions/{now['id']}/draft/publish", json={}, scope="write")
    assert r.status_code == 200, await r.get_json()
    assert await relay_and_embed(engine, org) == [[now["id"]]]
    assert (await vectors(engine, org))[(now["id"], "en")] != before[(now["id"], "en")]
    assert await found(org, MONEY_BACK) == [REFUND["title"]]

    body = {"title": "Which payment methods do you accept?", "answer": "Cards and PayPal."}
    r = await org.request("PUT", f"/questions/{later['id']}/draft", json=body, scope="write")
    assert r.status_code == 200
    at = utcnow() + timedelta(seconds=1)
    r = await org.post(
        f"/questions/{later['id']}/draft/publish",
        json={"scheduledPublishAt": iso(at)},
        scope="write",
    )
    assert r.status_code == 202, await r.get_json()
    assert await relay_and_embed(engine, org) == []
    await asyncio.sleep(max(0.0, (at - utcnow()).total_seconds()) + 0.05)
    await publish_due_questions(engine)
    assert await relay_and_embed(engine, org) == [[later["id"]]]
    assert (await vectors(engine, org))[(later["id"], "en")] != before[(later["id"], "en")]
    assert (await found(org, "can I use a credit card"))[:1] == [body["title"]]
    assert queued_embeddings(org) == []
