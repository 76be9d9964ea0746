"""What Lighthouse's SEO audits read (issue 41): every page kind describes itself in a
``<meta name="description">`` in its own language, and the pages' Content-Security-Policy lets
a tool fetch ``/robots.txt`` from inside the page while still running no script."""

from __future__ import annotations

import html
import re

from tests.api.helpcenter.helpers import category, enable, question, set_locales, translate
from tests.fixtures.orgs import OrgClient


async def description(org: OrgClient, path: str) -> str:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    assert r.status_code == 200, path
    body = await r.get_data(as_text=True)
    found = re.findall(r'<meta name="description" content="([^"]*)">', body)
    assert len(found) == 1, path
    return html.unescape(found[0])


async def test_every_page_kind_has_a_description_in_its_language(org: OrgClient) -> None:
    await enable(org, title="Acme help")
    await set_locales(org, ["en", "ar"])
    keys = await category(org, "API keys")
    q = await question(
        org,
        "How do I rotate a key?",
        "Open **Settings** and choose *Create key*.\n\n<img src=x onerror=alert(1)>",
        categoryId=keys["id"],
    )
    await translate(org, q["id"], "ar", "كيف أغيّر المفتاح؟", "افتح **الإعدادات**.", "published")

    # The home: its categories (the title, in the window's title, is not repeated).
    assert "API keys" in await description(org, "/en")
    assert await description(org, f"/en/categories/{keys['slug']}") == "API keys · Acme help"
    # The answer's one-line summary: markup and raw HTML leave no trace.
    assert await description(org, f"/en/questions/{q['slug']}") == (
        "Open Settings and choose Create key."
    )
    assert await description(org, f"/ar/questions/{q['slug']}") == "افتح الإعدادات."
    # The query is a label value, in Unicode isolates as everywhere (docs/decisions.md).
    searched = "Results for “\u2068key\u2069” · Acme help"
    assert await description(org, "/en/search?q=key") == searched


async def test_the_pages_csp_allows_fetches_to_the_service_but_no_script(org: OrgClient) -> None:
    await enable(org)
    r = await org.client.get(f"/hc/{org.slug}/en")
    csp = r.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp
    assert "script-src" not in csp
