"""Imports that keep meaning (issue 41), from outside: a vendor's export in through
``POST /imports``, then read through the API: the report counts each kind of item apart, the
source's creation and update times are the resources' ``createdAt``/``updatedAt``, and links
between imported articles lead to their new help-center pages (a link whose article was not
imported is kept, and reported)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.imports.helpers import all_categories, all_questions, enable_locales, fixture, run
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ZENDESK = fixture("zendesk.json")
ZEROS = {"created": 0, "updated": 0, "unchanged": 0, "failed": 0}


def _counts(**kinds: dict[str, int]) -> dict[str, dict[str, int]]:
    return {
        kind: {**ZEROS, **kinds.get(kind, {})}
        for kind in ("categories", "questions", "translations", "settings", "audiences")
    }


def by_title(items: list[dict[str, Any]], title: str) -> dict[str, Any]:
    return next(i for i in items if i.get("title", i.get("name")) == title)


# ---- counts by kind ---------------------------------------------------------------------------


async def test_the_report_counts_each_kind_apart(org: OrgClient, engine: AsyncEngine) -> None:
    job = await run(engine, org, "zendesk", ZENDESK)  # fr not enabled: its translations fail
    assert job["counts"] == {"created": 5, "updated": 0, "unchanged": 0, "failed": 2}, job
    assert job["countsByKind"] == _counts(
        categories={"created": 3}, questions={"created": 2}, translations={"failed": 2}
    ), job

    await enable_locales(org, "fr")
    again = await run(engine, org, "zendesk", ZENDESK)
    assert again["counts"] == {"created": 2, "updated": 0, "unchanged": 5, "failed": 0}
    assert again["countsByKind"] == _counts(
        categories={"unchanged": 3}, questions={"unchanged": 2}, translations={"created": 2}
    ), again
    r = await org.get(f"/imports/{again['id']}")
    assert (await r.get_json())["data"]["countsByKind"] == again["countsByKind"]


async def test_csv_counts_the_categories_it_makes_and_the_rows_it_fails(
    org: OrgClient, engine: AsyncEngine
) -> None:
    body = (
        b"title,answer,category,status,order,locale,externalId\n"
        b"Good,Fine,Account,published,1,,\n"
        b"Bad order,x,Account,draft,two,,\n"
        b"Sans id,y,,draft,1,fr,\n"
    )
    job = await run(engine, org, "csv", body)
    assert job["counts"] == {"created": 2, "updated": 0, "unchanged": 0, "failed": 2}, job
    assert job["countsByKind"] == _counts(
        categories={"created": 1},
        questions={"created": 1, "failed": 1},
        translations={"failed": 1},
    ), job


async def test_the_openapi_document_describes_counts_by_kind(org: OrgClient) -> None:
    r = await org.client.get("/openapi.json")
    schemas = (await r.get_json())["components"]["schemas"]
    job = schemas["ImportJobOut"]
    assert "countsByKind" in job["properties"] and "countsByKind" in job["required"]
    assert set(job["properties"]["counts"].get("$ref", "").split("/")[-1:]) == {"ImportCounts"}
    by_kind = schemas["ImportCountsByKind"]["properties"]
    assert set(by_kind) == {"categories", "questions", "translations", "settings", "audiences"}


# ---- source times -----------------------------------------------------------------------------


async def test_zendesk_times_are_the_questions_and_categories_own(
    org: OrgClient, engine: AsyncEngine
) -> None:
    job = await run(engine, org, "zendesk", ZENDESK)
    assert job["status"] == "succeeded", job
    questions = await all_questions(org)
    pay = by_title(questions, "How do I pay?")
    assert pay["createdAt"].startswith("2024-02-02T09:00:00")
    assert pay["updatedAt"].startswith("2024-06-02T09:00:00")
    r = await org.get(f"/questions/{pay['id']}")
    assert (await r.get_json())["data"]["createdAt"] == pay["createdAt"]
    billing = by_title(await all_categories(org), "Billing")
    assert billing["createdAt"].startswith("2024-02-01T10:00:00")
    assert billing["updatedAt"].startswith("2024-05-01T10:00:00")

    # A later edit in Zendesk: the update keeps its time, a revision records the change.
    changed = json.loads(ZENDESK)
    changed["articles"][0]["title"] = "How can I pay?"
    changed["articles"][0]["updated_at"] = "2024-09-09T09:00:00Z"
    again = await run(engine, org, "zendesk", json.dumps(changed).encode())
    assert again["countsByKind"]["questions"]["updated"] == 1, again
    r = await org.get(f"/questions/{pay['id']}")
    now = (await r.get_json())["data"]
    assert now["title"] == "How can I pay?"
    assert now["createdAt"] == pay["createdAt"] and now["updatedAt"].startswith("2024-09-09T09")
    r = await org.get(f"/questions/{pay['id']}/revisions")
    revisions = (await r.get_json())["data"]
    assert len(revisions) == 1 and revisions[0]["changedFields"] == ["title"]


async def test_translations_keep_their_source_times(org: OrgClient, engine: AsyncEngine) -> None:
    await enable_locales(org, "fr")
    await run(engine, org, "zendesk", ZENDESK)
    pay = by_title(await all_questions(org), "How do I pay?")
    r = await org.get(f"/questions/{pay['id']}/translations/fr")
    fr = (await r.get_json())["data"]
    assert fr["createdAt"].startswith("2024-03-01T09:00:00"), fr
    assert fr["updatedAt"].startswith("2024-03-01T09:00:00"), fr
    payments = by_title(await all_categories(org), "Payments")
    r = await org.get(f"/categories/{payments['id']}/translations/fr")
    assert (await r.get_json())["data"]["createdAt"].startswith("2024-03-01T09:00:00")


async def test_intercom_and_helpscout_times_are_kept(org: OrgClient, engine: AsyncEngine) -> None:
    await run(engine, org, "intercom", fixture("intercom.json"))
    widget = by_title(await all_questions(org), "Install the widget")
    assert widget["createdAt"].startswith("2024-06-27T12:52:37")  # 1719492757
    started = by_title(await all_categories(org), "Getting started")
    assert started["createdAt"].startswith("2024-06-27T12:51:50")  # 1719492710

    await run(engine, org, "helpscout", fixture("helpscout.json"))
    order = by_title(await all_questions(org), "Where is my order?")
    assert order["createdAt"].startswith("2023-08-22T10:00:00")
    assert order["updatedAt"].startswith("2023-08-22T10:00:00")


async def test_csv_and_markdown_times_and_a_time_that_is_none(
    org: OrgClient, engine: AsyncEngine
) -> None:
    body = (
        b"title,answer,createdAt,updatedAt\n"
        b"Dated,A,2021-03-04T05:06:07Z,2022-01-01T00:00:00+02:00\n"
        b"Undated,B,,\n"
        b"Garbled,C,yesterday,\n"
    )
    job = await run(engine, org, "csv", body)
    assert job["counts"]["created"] == 3 and job["counts"]["failed"] == 0, job
    questions = await all_questions(org)
    dated = by_title(questions, "Dated")
    assert dated["createdAt"].startswith("2021-03-04T05:06:07")
    assert dated["updatedAt"].startswith("2021-12-31T22:00:00")
    for title in ("Undated", "Garbled"):  # the import's own time
        assert by_title(questions, title)["createdAt"] > "2025", title
    assert [w for w in job["warnings"] if w["field"] == "createdAt"] == [
        {"item": "csv:garbled", "field": "createdAt", "issue": "'yesterday' is not a time: "
         "import time kept"}
    ]  # fmt: skip

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("Help/old.md", "---\ntitle: Old\ncreatedAt: 2019-05-06\n---\nBody\n")
    await run(engine, org, "markdown", archive.getvalue())
    old = by_title(await all_questions(org), "Old")
    assert old["createdAt"].startswith("2019-05-06T00:00:00")


# ---- links between imported articles ----------------------------------------------------------

ZD = "https://acme.zendesk.com/hc"


def _zendesk_with_links() -> bytes:
    export = json.loads(ZENDESK)
    pay, refund = export["articles"]
    # The first article links forward (to the second, a section, an article never exported);
    # the second links back, by a relative URL; the French translation links forward.
    pay["body"] = (
        f'<p>See <a href="{ZD}/en-us/articles/360012346-Refund-policy#steps">refunds</a>, '
        f'<a href="{ZD}/en-us/sections/360002000002-Payments">payments</a>, '
        f'<a href="{ZD}/en-us/articles/999999-Gone" title="Old">the old page</a> and '
        '<a href="https://acme.test/billing">billing</a>.</p>'
    )
    refund["body"] = '<p>Pay first: <a href="/hc/en-us/articles/360012345">paying</a>.</p>'
    export["translations"][0]["body"] = (
        f'<p>Voir <a href="{ZD}/fr/articles/360012346">remboursements</a>.</p>'
    )
    return json.dumps(export).encode()


async def test_zendesk_links_lead_to_the_imported_pages(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await enable_locales(org, "fr")
    body = _zendesk_with_links()
    job = await run(engine, org, "zendesk", body)
    assert job["status"] == "succeeded" and job["counts"]["failed"] == 0, job
    questions = await all_questions(org)
    pay, refund = by_title(questions, "How do I pay?"), by_title(questions, "Refund policy")
    payments = by_title(await all_categories(org), "Payments")
    hc = f"/hc/{org.slug}"

    answer = pay["answer"]
    assert f"[refunds]({hc}/en/questions/{refund['slug']}#steps)" in answer, answer
    assert f"[payments]({hc}/en/categories/{payments['slug']})" in answer, answer
    assert f'[the old page]({ZD}/en-us/articles/999999-Gone "Old")' in answer, answer
    assert "[billing](https://acme.test/billing)" in answer
    assert f"[paying]({hc}/en/questions/{pay['slug']})" in refund["answer"], refund["answer"]
    r = await org.get(f"/questions/{pay['id']}/translations/fr")
    fr = (await r.get_json())["data"]["answer"]
    assert f"[remboursements]({hc}/fr/questions/{refund['slug']})" in fr, fr
    assert not [q for q in questions if "invalid" in q["answer"]]  # no placeholder stored

    assert {"item": "zendesk:360012345", "field": "answer",
            "issue": f"link to {ZD}/en-us/articles/999999-Gone kept: its target was not imported"
            } in job["warnings"]  # fmt: skip
    assert len([w for w in job["warnings"] if "kept" in w["issue"]]) == 1, job["warnings"]
    # The forward link was written after its target: one revision, by the import; the source's
    # update time stays. A backward link was written at once: no revision.
    r = await org.get(f"/questions/{pay['id']}/revisions")
    assert [v["changedFields"] for v in (await r.get_json())["data"]] == [["answer"]]
    assert pay["updatedAt"].startswith("2024-06-02T09:00:00")
    r = await org.get(f"/questions/{refund['id']}/revisions")
    assert (await r.get_json())["data"] == []

    again = await run(engine, org, "zendesk", body)  # the links resolve to the same pages
    assert again["counts"] == {"created": 0, "updated": 0, "unchanged": 7, "failed": 0}, again

    # The rewritten link is a page of the help center.
    r = await org.patch("/settings", json={"helpCenter": {"enabled": True}})
    assert r.status_code == 200
    for question in (pay, refund):
        r = await org.patch(f"/questions/{question['id']}", json={"status": "published"})
        assert r.status_code == 200, await r.get_data()
    r = await org.client.get(f"{hc}/en/questions/{pay['slug']}")
    page = (await r.get_data()).decode()
    assert r.status_code == 200 and f'href="{hc}/en/questions/{refund["slug"]}#steps"' in page
    r = await org.client.get(f"{hc}/en/questions/{refund['slug']}")
    assert r.status_code == 200


async def test_intercom_and_helpscout_links_lead_to_the_imported_pages(
    org: OrgClient, engine: AsyncEngine
) -> None:
    export = json.loads(fixture("intercom.json"))
    first = export["articles"]["data"][0] if isinstance(export["articles"], dict) else None
    articles = export["articles"]["data"] if first else export["articles"]
    articles[0]["body"] = (
        '<p><a href="https://intercom.help/acme/en/articles/9333082-slack">Slack</a> in '
        '<a href="https://help.acme.test/en/collections/6871120-integrations">Integrations</a>'
        "</p>"
    )
    job = await run(engine, org, "intercom", json.dumps(export).encode())
    assert job["status"] == "succeeded", job
    questions = await all_questions(org)
    widget, slack = by_title(questions, "Install the widget"), by_title(questions, "Slack")
    integrations = by_title(await all_categories(org), "Integrations")
    hc = f"/hc/{org.slug}/en"
    assert f"[Slack]({hc}/questions/{slack['slug']})" in widget["answer"], widget["answer"]
    assert f"[Integrations]({hc}/categories/{integrations['slug']})" in widget["answer"]

    export = json.loads(fixture("helpscout.json"))
    export["articles"][0]["article"]["text"] = (
        '<p><a href="https://acme.helpscoutdocs.com/article/13-shipping-costs">Costs</a>, '
        '<a href="https://acme.helpscoutdocs.com/article/99-gone">gone</a></p>'
    )
    job = await run(engine, org, "helpscout", json.dumps(export).encode())
    assert job["status"] == "succeeded", job
    questions = await all_questions(org)
    order, costs = by_title(questions, "Where is my order?"), by_title(questions, "Shipping costs")
    assert f"[Costs]({hc}/questions/{costs['slug']})" in order["answer"], order["answer"]
    assert "[gone](https://acme.helpscoutdocs.com/article/99-gone)" in order["answer"]
    assert any("99-gone kept" in w["issue"] for w in job["warnings"]), job["warnings"]


async def test_markdown_links_between_files_lead_to_the_imported_pages(
    org: OrgClient, engine: AsyncEngine
) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(
            "Help/a.md",
            "---\ntitle: Alpha\n---\nSee [beta](b.md#fees), [gone](missing.md), "
            "[site](https://x.test/b.md) and [ref][b].\n\n[b]: <b.md>\n",
        )
        z.writestr(
            "Help/b.md",
            "---\ntitle: Beta\nexternalId: kb-2\n---\nBack to [alpha](../Help/a.md).\n",
        )
    job = await run(engine, org, "markdown", archive.getvalue())
    assert job["status"] == "succeeded" and job["counts"]["failed"] == 0, job
    questions = await all_questions(org)
    alpha, beta = by_title(questions, "Alpha"), by_title(questions, "Beta")
    hc = f"/hc/{org.slug}/en/questions"
    assert f"[beta]({hc}/{beta['slug']}#fees)" in alpha["answer"], alpha["answer"]
    assert f"[b]: {hc}/{beta['slug']}" in alpha["answer"], alpha["answer"]
    assert "[gone](missing.md)" in alpha["answer"] and "(https://x.test/b.md)" in alpha["answer"]
    assert f"[alpha]({hc}/{alpha['slug']})" in beta["answer"], beta["answer"]
    kept = [w for w in job["warnings"] if "kept" in w["issue"]]
    assert kept == [
        {"item": "markdown:Help/a", "field": "answer",
         "issue": "link to missing.md kept: its target was not imported"}
    ]  # fmt: skip
