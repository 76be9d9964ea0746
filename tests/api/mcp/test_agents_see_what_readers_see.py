"""Agents see what readers see (issue 41), from outside: MCP's ``list_categories`` with a
publishable key (the SDK's client against a real ``faq serve``) and ``llms.txt`` list exactly
the categories a visitor finds by following the help center's links (no empty category, no
empty "Uncategorized"); ``llms.txt`` sums answers up in clean sentences."""

from __future__ import annotations

import re
from typing import Any

import lxml.html
import pytest

from tests.api.helpcenter.helpers import category, enable, question
from tests.api.keys.helpers import make_public_key
from tests.api.mcp.conftest import connect, mcp_url
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow


async def shown_by_the_help_center(org: OrgClient) -> set[str]:
    """The slugs of the categories a visitor reaches from the home page, link by link."""
    root = f"/hc/{org.slug}/en"
    link = re.compile(rf"^{re.escape(root)}/categories/([a-z0-9-]+)/?$")
    found: set[str] = set()
    pages = [root]
    while pages:
        r = await org.client.get(pages.pop())
        assert r.status_code == 200, r.status_code
        for href in lxml.html.fromstring(await r.get_data()).xpath("//a/@href"):
            matched = link.match(href)
            if matched and matched.group(1) not in found:
                found.add(matched.group(1))
                pages.append(f"{root}/categories/{matched.group(1)}")
    return found


async def library(org: OrgClient) -> dict[str, dict[str, Any]]:
    """Shown: Billing (a published question) and Cards in it; Returns through Parcels, its
    sub-category. Hidden: Shipping (a draft only), Empty, and Uncategorized (nothing)."""
    await enable(org, title="Acme Help")
    made = {name: await category(org, name) for name in ("Billing", "Shipping", "Empty")}
    made["Cards"] = await category(org, "Cards", parent=made["Billing"]["id"])
    made["Returns"] = await category(org, "Returns")
    made["Parcels"] = await category(org, "Parcels", parent=made["Returns"]["id"])
    for name in ("Billing", "Cards", "Parcels"):
        await question(org, f"A {name} question?", "An answer.", categoryId=made[name]["id"])
    await question(org, "Unannounced?", "Soon.", status="draft", categoryId=made["Shipping"]["id"])
    return made


async def test_mcp_and_llms_txt_list_the_categories_the_help_center_shows(
    served: ApiProcess, org: OrgClient
) -> None:
    made = await library(org)
    shown = await shown_by_the_help_center(org)
    slugs = {name: c["slug"] for name, c in made.items()}
    assert shown == {slugs["Billing"], slugs["Cards"], slugs["Returns"], slugs["Parcels"]}
    for hidden in ("Shipping", "Empty"):  # the help center hides them: no page
        r = await org.client.get(f"/hc/{org.slug}/en/categories/{slugs[hidden]}")
        assert r.status_code == 404

    key = (await make_public_key(org))["key"]
    async with connect(mcp_url(served, org.slug), key) as client:
        listed = await client.call_tool("list_categories", {})
    assert not listed.is_error, listed.content
    categories = listed.structured_content["categories"]
    assert {c["slug"] for c in categories} == shown
    assert "uncategorized" not in listed.content[0].text.lower()
    by_slug = {c["slug"]: c for c in categories}
    assert by_slug[slugs["Parcels"]]["parentId"] == made["Returns"]["id"]

    r = await org.client.get(f"/hc/{org.slug}/llms.txt")
    assert r.status_code == 200
    sections = re.findall(r"^## (.+)$", (await r.get_data()).decode(), flags=re.M)
    top_level = {c["name"] for c in categories if c["parentId"] is None}
    assert sorted(sections) == sorted(top_level) == ["Billing", "Returns"]

    # A secret key lists the categories as the API does: every one a draft may go to.
    async with connect(mcp_url(served, org.slug), org.keys["read"]) as client:
        every = await client.call_tool("list_categories", {})
    listed_by_api = {c["slug"] for c in every.structured_content["categories"]}
    assert listed_by_api == {*slugs.values(), "uncategorized"}


async def test_llms_txt_sums_answers_up_in_clean_sentences(org: OrgClient) -> None:
    await enable(org, title="Acme Help")
    apps = await question(
        org,
        "Is there an app?",
        "Get it on the [App Store](https://apps.apple.com/app/1) and "
        "**[Google Play](https://play.google.com/store)**.\n\n"
        "| Browser | Desktop | Mobile |\n| --- | --- | --- |\n| Chrome | yes | yes |\n",
    )
    steps = await question(
        org,
        "How do I export?",
        "Three steps:\n\n1. Open *Settings*.\n2. Choose **Export**.\n3. Run `faq export`.\n\n"
        "```sh\nfaq export demo > demo.json\n```\n",
    )
    table = await question(
        org, "Which browsers?", "| Browser | Desktop |\n| --- | --- |\n| Chrome | yes |\n"
    )
    r = await org.client.get(f"/hc/{org.slug}/llms.txt")
    text = (await r.get_data()).decode()
    lines = {line.split("](", 1)[0]: line for line in text.splitlines() if line.startswith("- [")}
    page = f"http://localhost/hc/{org.slug}/en/questions"
    assert lines["- [Is there an app?"] == (
        f"- [Is there an app?]({page}/{apps['slug']}.md): Get it on the App Store and Google Play."
    )
    assert lines["- [How do I export?"] == (
        f"- [How do I export?]({page}/{steps['slug']}.md): "
        "Three steps: Open Settings. Choose Export. Run faq export."
    )
    assert lines["- [Which browsers?"] == f"- [Which browsers?]({page}/{table['slug']}.md)"
    for noise in ("---", "Browser", "Desktop", " .", "**", "faq export demo"):
        assert noise not in text, noise
