"""Zendesk Guide JSON imported from outside: HTTP in; questions, categories, translations,
the job's report and the outbox out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.api.imports.helpers import (
    all_categories,
    all_questions,
    count_rows,
    enable_locales,
    fixture,
    outbox_events,
    run,
    upload,
)
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ZENDESK = fixture("zendesk.json")


def by_title(items: list[dict[str, Any]], title: str) -> dict[str, Any]:
    return next(i for i in items if i.get("title", i.get("name")) == title)


async def test_import_builds_the_tree_questions_and_translations(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await enable_locales(org, "fr")
    job = await run(engine, org, "zendesk", ZENDESK)
    assert job["status"] == "succeeded", job
    # 3 categories (category, section, nested section), 2 articles, 2 translations
    assert job["counts"] == {"created": 7, "updated": 0, "unchanged": 0, "failed": 0}, job
    assert job["progress"]["bytesRead"] == job["progress"]["bytesTotal"] == len(ZENDESK)
    issues = " ".join(w["issue"] for w in job["warnings"])
    assert "<iframe> removed" in issues and "spanning" in issues

    categories = await all_categories(org)
    billing = by_title(categories, "Billing")
    payments = by_title(categories, "Payments")
    refunds = by_title(categories, "Refunds")
    assert billing["parentId"] is None and billing["description"] == "Invoices, payments and plans"
    assert payments["parentId"] == billing["id"]
    assert refunds["parentId"] == payments["id"]

    questions = await all_questions(org)
    pay = by_title(questions, "How do I pay?")
    refund = by_title(questions, "Refund policy")
    assert pay["status"] == "published" and pay["categoryId"] == payments["id"]
    assert refund["status"] == "draft" and refund["categoryId"] == refunds["id"]
    answer = pay["answer"]
    assert "## Cards & transfers" in answer
    assert "| Method | Fee |" in answer
    assert "```\ncurl https://api.acme.test/pay\n```" in answer
    assert "![Card form](https://acme.zendesk.com/hc/article_attachments/1/card.png)" in answer
    assert "youtube" not in answer and "—" in answer and "€" in answer
    assert "[Billing](https://acme.test/billing)" in refund["answer"]

    r = await org.get(f"/questions/{pay['id']}/translations/fr")
    assert r.status_code == 200
    fr = (await r.get_json())["data"]
    assert fr["title"] == "Comment payer ?" and fr["status"] == "published"
    assert "**Visa**" in fr["answer"]
    r = await org.get(f"/categories/{payments['id']}/translations/fr")
    assert (await r.get_json())["data"]["name"] == "Paiements"

    r = await org.get("/questions", query={"externalId": "zendesk:360012345"})
    assert [q["id"] for q in (await r.get_json())["data"]] == [pay["id"]]


async def test_reimport_updates_instead_of_duplicating(org: OrgClient, engine: AsyncEngine) -> None:
    await enable_locales(org, "fr")
    await run(engine, org, "zendesk", ZENDESK)
    again = await run(engine, org, "zendesk", ZENDESK)
    assert again["counts"] == {"created": 0, "updated": 0, "unchanged": 7, "failed": 0}, again

    changed = json.loads(ZENDESK)
    changed["articles"][0]["title"] = "How can I pay?"
    third = await run(engine, org, "zendesk", json.dumps(changed).encode())
    assert third["counts"] == {"created": 0, "updated": 1, "unchanged": 6, "failed": 0}, third
    questions = await all_questions(org)
    assert sorted(q["title"] for q in questions) == ["How can I pay?", "Refund policy"]
    pay = by_title(questions, "How can I pay?")
    r = await org.get(f"/questions/{pay['id']}/revisions")
    assert (await r.get_json())["data"][0]["changedFields"] == ["title"]
    assert len(await all_categories(org)) == 4  # the default category and the three


async def test_dry_run_reports_and_writes_nothing(org: OrgClient, engine: AsyncEngine) -> None:
    await enable_locales(org, "fr")
    job = await run(engine, org, "zendesk", ZENDESK, dryRun=True)
    assert job["status"] == "succeeded" and job["dryRun"] is True
    assert job["counts"]["created"] == 7
    assert await all_questions(org) == []
    assert len(await all_categories(org)) == 1
    assert await count_rows(engine, org, "external_refs") == 0
    assert "import.completed" not in await outbox_events(engine, org)


async def test_one_summary_event_unless_per_question_events(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    job = await run(engine, org, "zendesk", ZENDESK)
    events = await outbox_events(engine, org)
    assert events.count("import.completed") == 1
    assert not [e for e in events if e.startswith(("question.", "category."))], events
    assert "audit" in events  # the audit log still records every change

    await run(engine, other_org, "zendesk", ZENDESK, perQuestionEvents=True)
    events = await outbox_events(engine, other_org)
    assert events.count("question.created") == 2 and events.count("category.created") == 3
    assert job["id"]


async def test_malformed_files_are_400_and_leave_nothing(
    org: OrgClient, engine: AsyncEngine
) -> None:
    r = await upload(org, "zendesk", b'{"articles": [{"id": 1, "title": "x",')
    assert r.status_code == 400
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_failed"
    assert "invalid JSON" in error["details"][0]["issue"]

    r = await upload(org, "zendesk", b'{"posts": []}')
    assert r.status_code == 400
    assert "unknown top-level key 'posts'" in (await r.get_json())["error"]["details"][0]["issue"]

    r = await upload(org, "zendesk", b'{"articles": [{"title": "no id"}]}')
    assert r.status_code == 400
    assert "articles[0]: no id" in (await r.get_json())["error"]["details"][0]["issue"]

    r = await upload(org, "zendesk", b"[]")
    assert r.status_code == 400
    assert await count_rows(engine, org, "imports") == 0
    assert await count_rows(engine, org, "import_chunks") == 0

    r = await org.post(
        "/imports", data=ZENDESK, query={"format": "zendesk"}, headers={"Content-Type": "text/csv"}
    )
    assert r.status_code == 415
    r = await org.post("/imports", data=ZENDESK, query={"format": "word"})
    assert r.status_code == 400


async def test_upload_over_the_plan_limit_is_413(org_factory: OrgFactory) -> None:
    free = await org_factory(Plan.FREE)
    body = b'{"articles": [' + b" " * (11 * 2**20) + b"]}"
    r = await upload(free, "zendesk", body)
    assert r.status_code == 413
    assert (await r.get_json())["error"]["code"] == "payload_too_large"


async def test_plan_caps_fail_items_with_plan_limit_reached(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    free = await org_factory(Plan.FREE)  # 10 categories, the default included
    sections = [
        {"id": 500 + n, "category_id": None, "name": f"Section {n}", "position": n}
        for n in range(12)
    ]
    body = json.dumps({"sections": sections}).encode()
    job = await run(engine, free, "zendesk", body)
    assert job["counts"]["created"] == 9 and job["counts"]["failed"] == 3, job
    assert {e["issue"].split(":")[0] for e in job["errors"]} == {"plan_limit_reached"}
    assert len(await all_categories(free)) == 10


async def test_another_orgs_import_is_not_found(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    job = await run(engine, org, "zendesk", ZENDESK)
    for method, path in (("GET", ""), ("POST", "/cancel")):
        r = await other_org.request(method, f"/imports/{job['id']}{path}")
        assert r.status_code == 404
        assert (await r.get_json())["error"]["code"] == "import_not_found"
    r = await org.get(f"/imports/{job['id']}", scope="write")
    assert r.status_code == 403


async def test_a_webhook_receives_one_import_completed_delivery(
    org: OrgClient, engine: AsyncEngine
) -> None:
    from tasks.relay import relay_org

    r = await org.post(
        "/webhooks",
        json={
            "url": "https://hooks.example.com/faq",
            "events": ["import.completed", "question.created"],
        },
    )
    assert r.status_code == 201, await r.get_data()
    webhook = (await r.get_json())["data"]
    job = await run(engine, org, "zendesk", ZENDESK)
    await relay_org(engine, org.info.id)
    r = await org.get(f"/webhooks/{webhook['id']}/deliveries")
    deliveries = (await r.get_json())["data"]
    assert [d["event"] for d in deliveries] == ["import.completed"]
    sent = deliveries[0]["payload"]
    assert sent["data"]["id"] == job["id"] and sent["data"]["status"] == "succeeded"
    assert sent["data"]["counts"]["created"] == 5  # fr is not enabled: 2 translations failed


async def test_an_upload_over_the_api_body_limit_is_imported(
    org: OrgClient, engine: AsyncEngine
) -> None:
    """Every other body stays under FAQ_MAX_BODY_BYTES (1 MiB); an import's upload is held to
    the plan's limit (STARTER: 25 MB) instead."""
    export = json.loads(ZENDESK)
    template = export["articles"][0]
    paragraph = "<p>" + "All about paying. " * 200 + "</p>"  # about 3.6 KB
    export["articles"] = [
        {**template, "id": 900_000 + n, "title": f"Paying, part {n}", "name": f"Paying {n}",
         "body": paragraph * 12}
        for n in range(60)
    ]  # fmt: skip
    export["translations"] = []
    body = json.dumps(export).encode()
    assert len(body) > 2 * 2**20
    job = await run(engine, org, "zendesk", body)
    assert job["status"] == "succeeded", job
    titles = {q["title"] for q in await all_questions(org)}
    assert {f"Paying, part {n}" for n in range(60)} <= titles
