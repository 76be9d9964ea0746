"""The help center for agents (issue 31): ``llms.txt`` (llmstxt.org: an H1 with the help
center's title, a summary blockquote, an H2 per top-level category with ``[question](url):
summary`` links), ``llms-full.txt`` (every published answer in Markdown), per enabled locale,
bounded and cached; each question page's Markdown twin, linked from the page; ``robots.txt``
lists them; nothing while the help center is off."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter import llms
from tenancy.db import tenant_session
from tests.api.helpcenter.helpers import category, enable, question, set_locales, translate
from tests.fixtures.orgs import OrgClient

BASE = "http://localhost"


async def get(org: OrgClient, path: str) -> tuple[int, str, Any]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, (await r.get_data()).decode(), r.headers


async def content(org: OrgClient) -> dict[str, Any]:
    await enable(org, title="Acme Help")
    billing = await category(org, "Billing")
    cards = await category(org, "Cards", parent=billing["id"])
    shipping = await category(org, "Shipping")
    pay = await question(
        org, "How do I pay?", "By **card** or [bank transfer](https://bank.example).",
        categoryId=billing["id"],
    )  # fmt: skip
    visa = await question(
        org, "Do you take Visa?", "Yes, *Visa* and Mastercard.", categoryId=cards["id"]
    )
    track = await question(
        org, "Where is my parcel?", "Track it in Orders.", categoryId=shipping["id"]
    )
    draft = await question(
        org, "Secret plans", "Not yet.", status="draft", categoryId=shipping["id"]
    )
    return {"pay": pay, "visa": visa, "track": track, "draft": draft}


async def test_llms_txt_lists_published_questions_by_top_level_category(org: OrgClient) -> None:
    made = await content(org)
    status, text, headers = await get(org, "/llms.txt")
    assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8"
    lines = text.splitlines()
    assert lines[0] == "# Acme Help"
    assert lines[2].startswith("> ")
    root = f"{BASE}/hc/{org.slug}/en/questions"
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    by_name = {s.splitlines()[0]: s for s in sections}
    assert set(by_name) == {"Billing", "Shipping"}  # top-level only; Cards is inside Billing
    pay = f"- [How do I pay?]({root}/{made['pay']['slug']}.md): By card or bank transfer.\n"
    visa = f"- [Do you take Visa?]({root}/{made['visa']['slug']}.md): Yes, Visa and Mastercard.\n"
    assert pay in by_name["Billing"] and visa in by_name["Billing"]
    assert f"[Where is my parcel?]({root}/{made['track']['slug']}.md)" in by_name["Shipping"]
    assert "Secret plans" not in text
    # The same as the default locale's own.
    assert (await get(org, "/en/llms.txt"))[1] == text


async def test_llms_full_txt_has_every_published_answer_in_markdown(org: OrgClient) -> None:
    made = await content(org)
    status, text, _ = await get(org, "/llms-full.txt")
    assert status == 200
    assert text.startswith("# Acme Help\n")
    assert "## How do I pay?\n\nBy **card** or [bank transfer](https://bank.example).\n" in text
    assert f"Source: <{BASE}/hc/{org.slug}/en/questions/{made['visa']['slug']}>" in text
    assert "Track it in Orders." in text
    assert "Not yet." not in text


async def test_each_locale_has_its_files_and_unknown_ones_none(org: OrgClient) -> None:
    made = await content(org)
    await set_locales(org, ["en", "fr"])
    await translate(org, made["pay"]["id"], "fr", "Comment payer ?", "Par **carte**.", "published")
    status, text, _ = await get(org, "/fr/llms.txt")
    assert status == 200
    assert f"[Comment payer ?]({BASE}/hc/{org.slug}/fr/questions/{made['pay']['slug']}.md)" in text
    status, text, _ = await get(org, "/fr/llms-full.txt")
    assert status == 200 and "## Comment payer ?\n\nPar **carte**." in text
    assert (await get(org, "/de/llms.txt"))[0] == 404
    assert (await get(org, "/de/llms-full.txt"))[0] == 404


async def test_the_markdown_twin_of_a_question_page(org: OrgClient) -> None:
    made = await content(org)
    slug = made["pay"]["slug"]
    status, text, headers = await get(org, f"/en/questions/{slug}.md")
    assert status == 200 and headers["Content-Type"] == "text/markdown; charset=utf-8"
    assert text == (
        "# How do I pay?\n\nBy **card** or [bank transfer](https://bank.example).\n\n"
        f"Source: <{BASE}/hc/{org.slug}/en/questions/{slug}>\n"
    )
    # The page links its twin.
    status, page, _ = await get(org, f"/en/questions/{slug}")
    assert status == 200
    twin = f"/hc/{org.slug}/en/questions/{slug}.md"
    assert f'<link rel="alternate" type="text/markdown" href="{twin}">' in page
    # A draft has no twin, nor an unknown slug.
    assert (await get(org, f"/en/questions/{made['draft']['slug']}.md"))[0] == 404
    assert (await get(org, "/en/questions/nope.md"))[0] == 404


async def test_robots_txt_lists_them(org: OrgClient) -> None:
    await content(org)
    status, text, _ = await get(org, "/robots.txt")
    assert status == 200
    assert f"{BASE}/hc/{org.slug}/llms.txt" in text
    assert f"{BASE}/hc/{org.slug}/llms-full.txt" in text


async def test_nothing_while_the_help_center_is_off(org: OrgClient) -> None:
    made = await content(org)
    r = await org.patch("/settings", json={"helpCenter": {"enabled": False}})
    assert r.status_code == 200
    for path in (
        "/llms.txt",
        "/llms-full.txt",
        "/en/llms.txt",
        f"/en/questions/{made['pay']['slug']}.md",
    ):
        assert (await get(org, path))[0] == 404, path


async def test_the_files_follow_writes_and_another_orgs_content_is_absent(
    org: OrgClient, other_org: OrgClient
) -> None:
    await content(org)
    await enable(other_org)
    await question(other_org, "Other org's question", "Theirs.")
    first = (await get(org, "/llms.txt"))[1]
    assert "Other org's question" not in first
    await question(org, "A new question", "Fresh.")
    assert "A new question" in (await get(org, "/llms.txt"))[1]  # cached per content generation


async def test_the_files_are_bounded(org: OrgClient, engine: AsyncEngine) -> None:
    await content(org)
    for n in range(6):
        await question(org, f"Bulk question {n}", "Word " * 200)
    async with tenant_session(engine, org.info.schema_name) as session:
        small = await llms.llms_full_txt(
            session, title="T", root="https://x/hc/o", locale="en", limit=3000
        )
        index = await llms.llms_txt(
            session, title="T", root="https://x/hc/o", locale="en", limit=700
        )
    assert len(small.encode()) <= 3000
    assert small.rstrip().endswith(
        "(Cut at 3000 bytes: every question is in https://x/hc/o/sitemap.xml.)"
    )
    assert len(index.encode()) <= 700
    assert "Cut at 700 bytes" in index
