"""The hosted help center's pages over HTTP (issue 16): off by default, only published content
in the page's locale, sanitised answers, security headers, the sitemap, and pages cached like
API reads and invalidated by the same writes."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tests.api.helpcenter.helpers import category, enable, question, set_locales, translate
from tests.fixtures.orgs import OrgClient

TOKEN = re.compile(r'name="csrf_token" value="[^"]*"')


async def page(org: OrgClient, path: str) -> tuple[int, str, Any]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, (await r.get_data()).decode(), r.headers


async def test_off_by_default_and_every_page_404_when_disabled(org: OrgClient) -> None:
    q = await question(org, "Where is my order?", "In transit.")
    paths = ("", "/en", "/en/search?q=order", f"/en/questions/{q['slug']}", "/sitemap.xml",
             "/robots.txt", "/theme.css", "/en/categories/general")  # fmt: skip
    for path in paths:
        status, body, headers = await page(org, path)
        assert status == 404, path
        assert "text/html" in headers["Content-Type"], path
        assert org.info.name not in body and "Where is my order" not in body
    await enable(org)
    status, body, _ = await page(org, "/en")
    assert status == 200
    assert f"<h1>{org.info.name}</h1>" in body  # the title defaults to the org's name
    assert (await page(org, f"/en/questions/{q['slug']}"))[0] == 200
    r = await org.patch("/settings", json={"helpCenter": {"enabled": False}})
    assert r.status_code == 200
    for path in paths:
        assert (await page(org, path))[0] == 404, path
    # An unknown org, and /hc alone.
    r = await org.client.get("/hc/no-such-org-anywhere/en")
    assert r.status_code == 404 and "text/html" in r.headers["Content-Type"]
    assert (await org.client.get("/hc")).status_code == 404


async def test_root_redirects_to_the_default_locale(org: OrgClient) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr"])
    r = await org.patch("/settings", json={"defaultLocale": "fr"})
    assert r.status_code == 200
    r = await org.client.get(f"/hc/{org.slug}")
    assert r.status_code == 302
    assert r.headers["Location"].endswith(f"/hc/{org.slug}/fr")
    assert (await page(org, "/de"))[0] == 404  # not enabled
    assert (await page(org, "/xx-nope"))[0] == 404


async def test_home_shows_the_category_tree_and_the_most_viewed_published_questions(
    org: OrgClient, engine: AsyncEngine
) -> None:
    await enable(org, title="Acme Help")
    parent = await category(org, "Shipping")
    child = await category(org, "Returns", parent=parent["id"])
    a = await question(org, "Alpha question", "A.", categoryId=child["id"])
    b = await question(org, "Beta question", "B.")
    await question(org, "Draft secret question", "D.", status="draft")
    status, body, _ = await page(org, "/en")
    assert status == 200
    assert "<h1>Acme Help</h1>" in body and "<title>Acme Help</title>" in body
    # Returns is listed inside Shipping's item.
    shipping = body.index(f"/categories/{parent['slug']}")
    returns = body.index(f"/categories/{child['slug']}")
    assert shipping < returns
    assert "<ul" in body[shipping:returns]
    assert "Draft secret question" not in body
    # No views yet: no "Popular questions" at all (issue 41: never the newest rows instead).
    assert "popular-title" not in body and "Popular questions" not in body
    # Views of the last 30 days decide (older ones do not count).
    today = utcnow().date()
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        insert = text(
            "INSERT INTO question_views_daily (question_id, day, views) VALUES (:q, :d, :v)"
        )
        await session.execute(insert, {"q": a["id"], "d": today, "v": 5})
        await session.execute(insert, {"q": b["id"], "d": today - timedelta(days=3), "v": 2})
        await session.execute(insert, {"q": b["id"], "d": today - timedelta(days=40), "v": 500})
    await category(org, "Bump")  # any write: the cached home goes
    status, body, _ = await page(org, "/en")
    popular = body[body.index("popular-title") :]
    assert popular.index("Alpha question") < popular.index("Beta question")


async def test_only_published_questions_have_pages(org: OrgClient) -> None:
    await enable(org)
    published = await question(org, "Published one", "Yes.")
    draft = await question(org, "Draft one", "No.", status="draft")
    scheduled = await question(
        org, "Scheduled one", "Later.", status="scheduled",
        scheduledPublishAt=(utcnow() + timedelta(days=2)).isoformat(),
    )  # fmt: skip
    archived = await question(org, "Archived one", "Gone.")
    r = await org.patch(f"/questions/{archived['id']}", json={"status": "archived"}, scope="write")
    assert r.status_code == 200, await r.get_json()
    deleted = await question(org, "Deleted one", "Gone.")
    assert (await org.delete(f"/questions/{deleted['id']}", scope="write")).status_code == 204
    status, body, _ = await page(org, f"/en/questions/{published['slug']}")
    assert status == 200 and "Published one" in body
    for q in (draft, scheduled, archived):
        assert (await page(org, f"/en/questions/{q['slug']}"))[0] == 404, q["status"]
    # A deleted question that was published is gone (issue 32): 410, not 404.
    assert (await page(org, f"/en/questions/{deleted['slug']}"))[0] == 410
    assert (await page(org, "/en/questions/no-such-question"))[0] == 404
    assert (await page(org, f"/en/questions/{published['id']}"))[0] == 404  # slugs, not ids
    _, body, _ = await page(org, "/en/search?q=one")
    assert "Published one" in body
    for title in ("Draft one", "Scheduled one", "Archived one", "Deleted one"):
        assert title not in body


async def test_category_page_lists_its_published_questions(org: OrgClient) -> None:
    await enable(org)
    parent = await category(org, "Billing")
    child = await category(org, "Invoices", parent=parent["id"])
    await question(org, "How do I pay?", "By card.", categoryId=parent["id"])
    await question(org, "Unpublished pay", "x", status="draft", categoryId=parent["id"])
    await question(org, "Elsewhere", "x")
    # A sub-category is listed when it holds a published question (issue 32: empty are hidden).
    await question(org, "Invoice copy", "x", categoryId=child["id"])
    status, body, _ = await page(org, f"/en/categories/{parent['slug']}")
    assert status == 200
    assert "<h1>Billing</h1>" in body and "How do I pay?" in body
    assert f"/categories/{child['slug']}" in body  # its sub-category
    assert "Unpublished pay" not in body and "Elsewhere" not in body
    assert (await page(org, "/en/categories/no-such-category"))[0] == 404
    assert (await page(org, f"/en/categories/{parent['id']}"))[0] == 404  # slugs, not ids


async def test_pages_are_served_in_their_locale_with_the_translation_fallback(
    org: OrgClient,
) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr", "de"])
    q = await question(org, "Reset password", "Use the link.")
    await translate(org, q["id"], "fr", "Réinitialiser le mot de passe", "Le lien.", "published")
    await translate(org, q["id"], "de", "Passwort (Entwurf)", "Entwurf.", "draft")
    _, fr, _ = await page(org, f"/fr/questions/{q['slug']}")
    assert '<html lang="fr"' in fr
    assert "Réinitialiser le mot de passe" in fr and "Reset password" not in fr
    _, de, _ = await page(org, f"/de/questions/{q['slug']}")
    assert '<html lang="de"' in de
    assert "Reset password" in de and "Entwurf" not in de  # a draft is not served
    _, en, _ = await page(org, f"/en/questions/{q['slug']}")
    base = f"http://localhost/hc/{org.slug}"
    assert f'<link rel="canonical" href="{base}/en/questions/{q["slug"]}">' in en
    for tag in ("en", "fr", "de"):
        alternate = (
            f'<link rel="alternate" hreflang="{tag}" href="{base}/{tag}/questions/{q["slug"]}">'
        )
        assert alternate in en, tag
        assert f'href="{base}/{tag}/questions/{q["slug"]}" hreflang="{tag}"' in en  # switcher
    assert f'hreflang="x-default" href="{base}/en/questions/{q["slug"]}"' in en
    _, search, _ = await page(org, "/fr/search?q=mot")
    assert "Réinitialiser le mot de passe" in search
    status, _, headers = await page(org, f"/FR/questions/{q['slug']}")
    assert status == 301  # canonical case, the rest of the URL kept
    assert headers["Location"].endswith(f"/hc/{org.slug}/fr/questions/{q['slug']}")
    status, _, headers = await page(org, "/FR/search?q=mot")
    assert status == 301
    assert headers["Location"].endswith(f"/hc/{org.slug}/fr/search?q=mot")


async def test_an_answer_is_sanitised(org: OrgClient) -> None:
    await enable(org)
    answer = (
        "Hello **there**.\n\n<script>window.pwned=1</script>\n\n"
        '<img src=x onerror="window.pwned=2">\n\n[click](javascript:window.pwned=3)\n\n'
        '<a href="javascript:alert(1)" onclick="alert(2)">raw</a>\n\n'
        "[docs](https://example.com/docs) and [mail](mailto:help@example.com)"
    )
    q = await question(org, "Tricky answer", answer)
    status, body, _ = await page(org, f"/en/questions/{q['slug']}")
    assert status == 200
    assert "<strong>there</strong>" in body
    assert "<script" not in body.lower()
    assert not re.search(r"<[^>]+\son\w+\s*=", body, re.IGNORECASE)
    assert not re.search(r"""<a\s[^>]*href\s*=\s*["']?\s*javascript:""", body, re.IGNORECASE)
    assert '<a href="https://example.com/docs" rel="noopener noreferrer">docs</a>' in body
    assert 'href="mailto:help@example.com"' in body


async def test_every_response_carries_the_security_headers(org: OrgClient) -> None:
    await enable(org)
    c = await category(org, "Security")
    q = await question(org, "Headers", "Yes.", categoryId=c["id"])
    paths = ("/en", f"/en/categories/{c['slug']}", f"/en/questions/{q['slug']}",
             "/en/search?q=headers", "/sitemap.xml", "/robots.txt", "/theme.css",
             "/en/questions/missing", "/de", "/en/nothing/here")  # fmt: skip
    for path in paths:
        status, body, headers = await page(org, path)
        assert status in (200, 404), path
        csp = headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp, path
        assert "'unsafe-inline'" not in csp and "frame-ancestors 'none'" in csp
        assert headers["X-Content-Type-Options"] == "nosniff", path
        assert headers["Referrer-Policy"] == "strict-origin-when-cross-origin", path
        assert "style=" not in body and "<style" not in body, path  # no inline style
        assert "<script" not in body, path


async def test_the_primary_color_comes_from_the_orgs_stylesheet(org: OrgClient) -> None:
    await enable(org, primaryColor="#ffeeaa")  # light: dark text on it
    _, body, _ = await page(org, "/en")
    href = re.search(r'<link rel="stylesheet" href="([^"]+)">', body)
    assert href is not None and href.group(1).startswith(f"/hc/{org.slug}/theme.css")
    r = await org.client.get(href.group(1))
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/css")
    css = (await r.get_data()).decode()
    assert "--hc-primary:#ffeeaa" in css and "--hc-on-primary:#000000" in css
    await enable(org, primaryColor="#102030")
    _, body2, _ = await page(org, "/en")
    assert re.search(r'<link rel="stylesheet" href="([^"]+)">', body2).group(1) != href.group(1)  # type: ignore[union-attr]


async def test_sitemap_and_robots(org: OrgClient) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr"])
    q = await question(org, "In the sitemap", "Yes.")
    d = await question(org, "Not in the sitemap", "No.", status="draft")
    base = f"http://localhost/hc/{org.slug}"
    r = await org.client.get(f"/hc/{org.slug}/sitemap.xml")
    assert r.status_code == 200 and "xml" in r.headers["Content-Type"]
    index = (await r.get_data()).decode()
    assert "<sitemapindex" in index and f"<loc>{base}/sitemaps/1.xml</loc>" in index
    r = await org.client.get(f"/hc/{org.slug}/sitemaps/1.xml")
    assert r.status_code == 200 and "xml" in r.headers["Content-Type"]
    xml = (await r.get_data()).decode()
    assert 'xmlns:xhtml="http://www.w3.org/1999/xhtml"' in xml
    for tag in ("en", "fr"):
        assert f"<loc>{base}/{tag}/questions/{q['slug']}</loc>" in xml
        href = f"{base}/{tag}/questions/{q['slug']}"
        assert f'<xhtml:link rel="alternate" hreflang="{tag}" href="{href}"/>' in xml
    assert d["slug"] not in xml
    r = await org.client.get(f"/hc/{org.slug}/robots.txt")
    assert r.status_code == 200
    assert f"Sitemap: {base}/sitemap.xml" in (await r.get_data()).decode()


async def test_pages_are_cached_and_follow_api_writes_at_once(org: OrgClient, app: Any) -> None:
    await enable(org)
    listed = await category(org, "Listed")
    q = await question(org, "Cached title", "Old answer.", categoryId=listed["id"])
    path = f"/en/questions/{q['slug']}"
    cache = app.extensions["tenancy"].cache
    _, first, _ = await page(org, path)
    hits = cache.hits
    _, second, _ = await page(org, path)
    assert cache.hits == hits + 1  # served from the cache
    # The same page, but for the feedback form's CSRF token: each response makes its own,
    # stamped to the second (two requests either side of a second's tick differ there).
    assert TOKEN.sub("", second) == TOKEN.sub("", first)
    assert len(TOKEN.findall(first)) == 1
    listing = f"/en/categories/{listed['slug']}"  # a page listing it
    _, home, _ = await page(org, listing)
    assert "Cached title" in home
    edit = {"title": "Edited title", "answer": "New answer."}
    r = await org.patch(f"/questions/{q['id']}", json=edit, scope="write")
    assert r.status_code == 200, await r.get_json()
    _, edited, _ = await page(org, path)
    assert "Edited title" in edited and "New answer." in edited and "Cached title" not in edited
    _, home, _ = await page(org, listing)
    assert "Edited title" in home
    r = await org.patch(f"/questions/{q['id']}", json={"status": "archived"}, scope="write")
    assert r.status_code == 200
    assert (await page(org, path))[0] == 404
    # The title of the help center is in every page: a settings change shows at once too.
    await enable(org, title="Renamed center")
    assert "Renamed center" in (await page(org, "/en"))[1]


async def test_the_question_page_holds_the_feedback_section_even_from_the_cache(
    org: OrgClient,
) -> None:
    await enable(org)
    q = await question(org, "Feedback here", "Yes.")
    for _ in range(2):  # built, then from the cache
        status, body, _ = await page(org, f"/en/questions/{q['slug']}")
        assert status == 200
        section = body[body.index('<section id="feedback"') :]
        assert "<!--hc:feedback-->" not in body
        assert "</section>" in section
