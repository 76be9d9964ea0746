"""Intercom, Help Scout and Markdown imported from outside."""

from __future__ import annotations

import io
import json
import zipfile

from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.imports.helpers import (
    all_categories,
    all_questions,
    enable_locales,
    fixture,
    run,
    upload,
)
from tests.fixtures.orgs import OrgClient


async def test_intercom_collections_articles_and_translations(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await enable_locales(org, "fr")
    body = fixture("intercom.json")
    job = await run(engine, org, "intercom", body)
    # 2 collections, 1 collection translation, 2 articles, 1 article translation
    assert job["counts"] == {"created": 6, "updated": 0, "unchanged": 0, "failed": 0}, job
    assert any("<video> removed" in w["issue"] for w in job["warnings"])
    categories = {c["name"]: c for c in await all_categories(org)}
    assert categories["Integrations"]["parentId"] == categories["Getting started"]["id"]
    questions = {q["title"]: q for q in await all_questions(org)}
    widget = questions["Install the widget"]
    assert widget["status"] == "published"
    assert widget["categoryId"] == categories["Getting started"]["id"]
    assert '<script src="https://js.acme.test/w.js"></script>' in widget["answer"]
    assert "[open the app](https://app.acme.test)" in widget["answer"]
    slack = questions["Slack"]
    assert slack["status"] == "draft" and slack["categoryId"] == categories["Integrations"]["id"]
    r = await org.get(f"/questions/{widget['id']}/translations/fr")
    fr = (await r.get_json())["data"]
    assert (fr["title"], fr["status"]) == ("Installer le widget", "draft")
    r = await org.get(f"/categories/{categories['Getting started']['id']}/translations/fr")
    assert (await r.get_json())["data"]["name"] == "Premiers pas"

    bare = json.loads(body)
    bare = {"collections": bare["collections"]["data"], "articles": bare["articles"]["data"]}
    again = await run(engine, org, "intercom", json.dumps(bare).encode())
    assert again["counts"] == {"created": 0, "updated": 0, "unchanged": 6, "failed": 0}, again


async def test_helpscout_collections_categories_and_articles(
    org: OrgClient, engine: AsyncEngine
) -> None:
    job = await run(engine, org, "helpscout", fixture("helpscout.json"))
    assert job["counts"] == {"created": 5, "updated": 0, "unchanged": 0, "failed": 0}, job
    issues = {(w["field"], w["issue"]) for w in job["warnings"]}
    assert ("slug", "uncategorized is taken: uncategorized-2 used") in issues
    assert ("categories", "in 2 categories: the first kept") in issues
    categories = {c["name"]: c for c in await all_categories(org)}
    assert categories["Orders"]["parentId"] == categories["Help"]["id"]
    assert categories["Orders"]["slug"] == "uncategorized-2"
    questions = {q["title"]: q for q in await all_questions(org)}
    order = questions["Where is my order?"]
    assert order["slug"] == "where-is-my-order" and order["status"] == "published"
    assert order["categoryId"] == categories["Orders"]["id"]
    costs = questions["Shipping costs"]
    assert costs["status"] == "draft" and costs["categoryId"] == categories["Shipping"]["id"]
    assert costs["answer"] == "Free over 50\xa0€."


def _zip(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return out.getvalue()


MARKDOWN = {
    "Billing/pay.md": "---\ntitle: How do I pay?\nstatus: published\norder: 2\n---\nBy **card**.\n",
    "Billing/pay.fr.md": (
        "---\ntitle: Comment payer ?\nlocale: fr\nstatus: published\n---\nPar carte.\n"
    ),
    "Billing/Refunds/policy.md": "---\ntitle: Refund policy\nslug: refunds\n---\n30 days.\n",
    "intro.md": "---\ntitle: Welcome\ncategory: Getting started\nstatus: published\n---\nHello!\n",
}


async def test_markdown_folders_front_matter_and_translations(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await enable_locales(org, "fr")
    job = await run(engine, org, "markdown", _zip(MARKDOWN))
    # Billing, Billing/Refunds, 3 questions, "Getting started" (made by name), 1 translation
    assert job["counts"] == {"created": 7, "updated": 0, "unchanged": 0, "failed": 0}, job
    categories = {c["name"]: c for c in await all_categories(org)}
    assert categories["Refunds"]["parentId"] == categories["Billing"]["id"]
    questions = {q["title"]: q for q in await all_questions(org)}
    pay = questions["How do I pay?"]
    assert (pay["answer"], pay["status"], pay["order"]) == ("By **card**.", "published", 2)
    assert questions["Refund policy"]["slug"] == "refunds"
    assert questions["Refund policy"]["categoryId"] == categories["Refunds"]["id"]
    assert questions["Welcome"]["categoryId"] == categories["Getting started"]["id"]
    r = await org.get(f"/questions/{pay['id']}/translations/fr")
    assert (await r.get_json())["data"]["answer"] == "Par carte."
    r = await org.get("/questions", query={"externalId": "markdown:Billing/pay"})
    assert [q["id"] for q in (await r.get_json())["data"]] == [pay["id"]]

    again = await run(engine, org, "markdown", _zip(MARKDOWN))
    assert again["counts"]["created"] == 0 and again["counts"]["unchanged"] == 6, again

    bad = _zip({"a.md": "---\ntitle: [unclosed\n---\nx\n"})
    r = await upload(org, "markdown", bad)
    assert r.status_code == 400
    issue = (await r.get_json())["error"]["details"][0]["issue"]
    assert "a.md line 2, column 17: front matter is not YAML" in issue  # the file's line
