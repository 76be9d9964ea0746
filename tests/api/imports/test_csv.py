"""CSV imported from outside: categories by name or slug (made when missing), translations
by externalId, slugs that clash suffixed and reported, malformed files refused."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.imports.helpers import (
    all_categories,
    all_questions,
    count_rows,
    enable_locales,
    fixture,
    run,
    upload,
)
from tests.fixtures.orgs import OrgClient

CSV = fixture("faq.csv")


async def test_csv_rows_become_questions_categories_and_translations(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await enable_locales(org, "fr")
    job = await run(engine, org, "csv", CSV)
    assert job["status"] == "succeeded", job
    # 3 questions, 2 categories made (Account, Billing & Payments), 1 translation
    assert job["counts"] == {"created": 6, "updated": 0, "unchanged": 0, "failed": 0}, job
    categories = {c["name"]: c for c in await all_categories(org)}
    assert set(categories) == {"Uncategorized", "Account", "Billing & Payments"}
    questions = {q["title"]: q for q in await all_questions(org)}
    reset = questions["How do I reset my password?"]
    assert reset["slug"] == "reset-password" and reset["status"] == "published"
    assert reset["answer"] == "Open **Settings**, then:\n\n1. Click *Reset*\n2. Check your mail"
    assert reset["categoryId"] == categories["Account"]["id"]
    export = questions["Can I export my data?"]
    assert export["categoryId"] == categories["Account"]["id"]  # by slug
    assert export["status"] == "draft" and export["order"] == 2
    r = await org.get(f"/questions/{reset['id']}/translations/fr")
    assert (await r.get_json())["data"]["title"] == "Comment réinitialiser mon mot de passe ?"
    r = await org.get("/categories", query={"externalId": "nope"})
    assert (await r.get_json())["data"] == []

    again = await run(engine, org, "csv", CSV)
    assert again["counts"] == {"created": 0, "updated": 0, "unchanged": 4, "failed": 0}, again
    assert len(await all_questions(org)) == 3


async def test_a_taken_slug_gets_a_suffix_and_is_reported(
    org: OrgClient, engine: AsyncEngine
) -> None:
    r = await org.post(
        "/questions",
        json={
            "title": "Older",
            "answer": "a",
            "categoryId": (await all_categories(org))[0]["id"],
            "status": "draft",
            "slug": "reset-password",
        },
    )
    assert r.status_code == 201
    job = await run(engine, org, "csv", b"title,answer,slug\nReset,How to reset,reset-password\n")
    assert job["counts"]["created"] == 1
    assert job["warnings"] == [
        {
            "item": "csv:reset-password",
            "field": "slug",
            "issue": "reset-password is taken: reset-password-2 used",
        }
    ]
    slugs = sorted(q["slug"] for q in await all_questions(org))
    assert slugs == ["reset-password", "reset-password-2"]


async def test_bad_rows_fail_alone_and_bad_files_are_400(
    org: OrgClient, engine: AsyncEngine
) -> None:
    body = (
        b"title,answer,status,order\n"
        b"Good,Fine,published,1\n,No title,draft,2\nX,Y,live,3\nZ,W,draft,two\n"
    )
    job = await run(engine, org, "csv", body)
    assert job["counts"] == {"created": 1, "updated": 0, "unchanged": 0, "failed": 3}, job
    fields = sorted(e["field"] for e in job["errors"])
    assert fields == ["order", "status", "title"], job["errors"]

    for body, issue in (
        (b"title,body\nA,B\n", "line 1: unknown column 'body'"),
        (b"title,slug\nA,a\n", "line 1: the header has no 'answer' column"),
        (b"title,answer\nA,B,C\n", "line 2: 3 fields, the header has 2"),
        (b'title,answer\n"A,B\n', "line 2"),
        (b"title,answer\n\xff\xfe,x\n", "not UTF-8"),
        (b"", "empty"),
    ):
        r = await upload(org, "csv", body)
        assert r.status_code == 400, body
        assert issue in (await r.get_json())["error"]["details"][0]["issue"], body
    assert await count_rows(engine, org, "imports") == 1
