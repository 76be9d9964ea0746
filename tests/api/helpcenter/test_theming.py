"""Theming within safe bounds and what visitors see (issue 32): header and footer links and a
legal text from the settings, the title shown once, a logo uploaded (bounded, type-checked,
served by us with caching), no org CSS or script; empty categories hidden at every depth,
category descriptions, the feedback form's order, and the hooks other features fill."""

from __future__ import annotations

from typing import Any

import pytest
from markupsafe import Markup
from quart import Quart

from api.helpcenter.favicon import png
from api.helpcenter.i18n import Labels
from api.helpcenter.theming import MAX_LOGO_BYTES
from tests.api.helpcenter.helpers import category, enable, question
from tests.fixtures.orgs import OrgClient

LINKS = {
    "headerLinks": [{"label": "Status", "url": "https://status.example.com"}],
    "footerLinks": [
        {"label": "Privacy", "url": "/privacy"},
        {"label": "Contact", "url": "mailto:help@example.com"},
    ],
    "legalText": "© 2026 Acme Inc.\nAcme is a <b>registered</b> trademark.",
}


async def page(org: OrgClient, path: str) -> tuple[int, str]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, await r.get_data(as_text=True)


async def test_header_and_footer_links_and_legal_text_come_from_the_settings(
    org: OrgClient,
) -> None:
    await enable(org, title="Acme Help", **LINKS)
    q = await question(org, "Reset password", "Use the link.")
    r = await org.get("/settings")
    hc = (await r.get_json())["data"]["helpCenter"]
    assert {k: hc[k] for k in LINKS} == LINKS
    for path in ("/en", f"/en/questions/{q['slug']}", "/en/search?q=reset"):
        status, body = await page(org, path)
        assert status == 200
        header = body[body.index('<header class="site">') : body.index("</header>")]
        assert '<a href="https://status.example.com" dir="auto">Status</a>' in header
        footer = body[body.index('<footer class="site-footer">') :]
        assert '<a href="/privacy" dir="auto">Privacy</a>' in footer
        assert '<a href="mailto:help@example.com" dir="auto">Contact</a>' in footer
        legal = "<bdi>© 2026 Acme Inc.</bdi><br><bdi>Acme is a &lt;b&gt;registered&lt;/b&gt;"
        assert legal + " trademark.</bdi></p>" in footer
        assert "Acme Help" not in footer  # the footer does not repeat the title
    _, home = await page(org, "/en")
    # The home page shows the title once: its heading (and the window's title).
    assert home.count("Acme Help") == 2
    assert "<h1>Acme Help</h1>" in home and "<title>Acme Help</title>" in home


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"headerLinks": [{"label": "x", "url": "javascript:alert(1)"}]}, "headerLinks[0].url"),
        ({"headerLinks": [{"label": "x", "url": "//evil.example"}]}, "headerLinks[0].url"),
        ({"footerLinks": [{"label": "x", "url": "data:text/html,hi"}]}, "footerLinks[0].url"),
        ({"footerLinks": [{"label": "", "url": "/a"}]}, "footerLinks[0].label"),
        ({"footerLinks": [{"label": "x", "url": "/a", "style": "x"}]}, "footerLinks[0]"),
        ({"headerLinks": [{"label": "x", "url": "/a"}] * 7}, "headerLinks"),
        ({"legalText": "x" * 1001}, "legalText"),
        ({"css": "body{display:none}"}, "css"),
        ({"script": "alert(1)"}, "script"),
        ({"logoUrl": "https://evil.example/logo.png"}, "logoUrl"),
    ],
)
async def test_bad_theming_is_refused_and_changes_nothing(
    org: OrgClient, body: dict[str, Any], field: str
) -> None:
    before = (await (await org.get("/settings")).get_json())["data"]
    r = await org.patch("/settings", json={"helpCenter": body})
    assert r.status_code == 400
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_failed"
    assert [d["field"] for d in error["details"]] == [f"helpCenter.{field}"]
    assert (await (await org.get("/settings")).get_json())["data"] == before


async def put_logo(org: OrgClient, data: bytes, content_type: str, scope: str = "admin") -> Any:
    return await org.request(
        "PUT",
        "/settings/help-center/logo",
        data=data,
        headers={"Content-Type": content_type},
        scope=scope,
    )


async def test_a_logo_is_uploaded_bounded_checked_and_served_with_caching(
    org: OrgClient, other_org: OrgClient
) -> None:
    await enable(org, title="Acme Help")
    await enable(other_org)
    logo = png("#336699")
    assert (await put_logo(org, logo, "image/png", scope="write")).status_code == 403
    r = await put_logo(org, logo, "image/png")
    assert r.status_code == 200, await r.get_json()
    url = (await r.get_json())["data"]["helpCenter"]["logoUrl"]
    assert url.startswith(f"/hc/{org.slug}/logo/") and url.endswith(".png")
    served = await org.client.get(url)
    assert served.status_code == 200
    assert await served.get_data() == logo
    assert served.headers["Content-Type"] == "image/png"
    assert served.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    _, body = await page(org, "/en")
    assert f'<img class="logo" src="{url}" alt="">' in body
    # Another org's URL space does not serve it.
    other = url.replace(f"/hc/{org.slug}/", f"/hc/{other_org.slug}/")
    assert (await org.client.get(other)).status_code == 404
    # A settings change keeps the logo.
    r = await org.patch("/settings", json={"helpCenter": {"title": "Acme Support"}})
    assert (await r.get_json())["data"]["helpCenter"]["logoUrl"] == url
    # Refused: a body that is not what its type says, SVG, too large; nothing changes.
    refused = [
        (b"<svg xmlns='http://www.w3.org/2000/svg'><script>1</script></svg>", "image/svg+xml", 400),
        (b"GIF89a not a png", "image/png", 400),
        (b"", "image/png", 400),
        (b"\x89PNG\r\n\x1a\n" + b"0" * MAX_LOGO_BYTES, "image/png", 413),
    ]  # fmt: skip
    for data, content_type, status in refused:
        r = await put_logo(org, data, content_type)
        assert r.status_code == status, (content_type, status)
        assert set((await r.get_json())["error"]) >= {"code", "message", "details"}
    r = await org.get("/settings")
    assert (await r.get_json())["data"]["helpCenter"]["logoUrl"] == url
    # A new logo has a new URL; the old one is gone.
    r = await put_logo(org, png("#993366"), "image/png")
    new_url = (await r.get_json())["data"]["helpCenter"]["logoUrl"]
    assert new_url != url
    assert (await org.client.get(url)).status_code == 404
    assert (await org.client.get(new_url)).status_code == 200
    r = await org.delete("/settings/help-center/logo")
    assert r.status_code == 200
    assert (await r.get_json())["data"]["helpCenter"]["logoUrl"] is None
    assert (await org.client.get(new_url)).status_code == 404
    _, body = await page(org, "/en")
    assert 'class="logo"' not in body


async def test_categories_without_a_published_question_are_hidden_at_every_depth(
    org: OrgClient,
) -> None:
    await enable(org)
    top = await category(org, "Account")
    middle = await category(org, "Security", parent=top["id"])
    deep = await category(org, "Passwords", parent=middle["id"])
    empty_child = await category(org, "Empty child", parent=middle["id"])
    empty_top = await category(org, "Empty top")
    drafts = await category(org, "Only drafts")
    await question(org, "Reset password", "Use the link.", categoryId=deep["id"])
    await question(org, "Unfinished", "Draft.", status="draft", categoryId=drafts["id"])
    _, home = await page(org, "/en")
    for shown in (top, middle, deep):
        assert f'/categories/{shown["slug"]}"' in home, shown["name"]
    for hidden in (empty_child, empty_top, drafts):
        assert f'/categories/{hidden["slug"]}"' not in home, hidden["name"]
    assert "Uncategorized" not in home and "General" not in home  # the automatic one, empty
    status, body = await page(org, f"/en/categories/{middle['slug']}")
    assert status == 200
    assert f'/categories/{deep["slug"]}"' in body
    assert f'/categories/{empty_child["slug"]}"' not in body
    for hidden in (empty_child, empty_top, drafts):
        assert (await page(org, f"/en/categories/{hidden['slug']}"))[0] == 404, hidden["name"]
    # A published question shows its category (and its ancestors) at once.
    await question(org, "Now shown", "Yes.", categoryId=empty_child["id"])
    assert (await page(org, f"/en/categories/{empty_child['slug']}"))[0] == 200
    _, home = await page(org, "/en")
    assert f'/categories/{empty_child["slug"]}"' in home


async def test_category_descriptions_are_shown(org: OrgClient) -> None:
    await enable(org)
    r = await org.post(
        "/categories",
        json={"name": "Billing", "description": "Invoices, cards & refunds."},
        scope="write",
    )
    assert r.status_code == 201, await r.get_json()
    billing = (await r.get_json())["data"]
    await question(org, "How do I pay?", "By card.", categoryId=billing["id"])
    _, home = await page(org, "/en")
    assert '<p class="desc"><bdi>Invoices, cards &amp; refunds.</bdi></p>' in home
    _, body = await page(org, f"/en/categories/{billing['slug']}")
    assert '<p class="lead"><bdi>Invoices, cards &amp; refunds.</bdi></p>' in body


async def test_the_feedback_form_asks_yes_or_no_first(org: OrgClient) -> None:
    await enable(org)
    q = await question(org, "Reset password", "Use the link.")
    _, body = await page(org, f"/en/questions/{q['slug']}")
    form = body[body.index('<div class="hc-feedback">') :]
    yes, no = form.index('value="yes"'), form.index('value="no"')
    reason = form.index("<textarea")
    assert yes < no < reason
    assert form.index("If not, what was missing?") > no
    assert form.index(">Send</button>") > reason  # a No sent with its reason


def context(app: Quart, **extra: Any) -> dict[str, Any]:
    site: dict[str, Any] = {
        "title": "Acme", "base": "/hc/acme/en", "home": "/hc/acme/en",
        "search": "/hc/acme/en/search", "theme_url": "/t.css", "favicon_url": "/f.ico",
        "logo_url": None, "header_links": [], "footer_links": [], "legal_lines": [],
    }  # fmt: skip
    page = {"locale": "fr", "dir": "ltr", "canonical": "https://x/hc/acme/fr",
            "alternates": [], "x_default": "https://x/hc/acme/en"}  # fmt: skip
    return {"site": site, "page": page, "q": "", "_": Labels("fr"), **extra}


async def render(app: Quart, name: str, **extra: Any) -> str:
    async with app.app_context():
        template = app.jinja_env.get_template(name)
        return await template.render_async(context(app, **extra))


async def test_hooks_render_their_data_and_nothing_when_absent(app: Quart) -> None:
    """Search snippets (``snippet_html``), related questions (``related``) and the Markdown
    twin (``markdown_url``): filled by other features, rendered here."""
    question = {"title": "Q", "locale": "fr", "slug": "q", "categoryId": None}
    base = {"question": question, "answer": Markup("<p>A</p>"), "crumbs": [], "feedback_slot": ""}
    bare = await render(app, "hc/question.html", **base)
    assert "related-title" not in bare and "text/markdown" not in bare
    full = await render(
        app, "hc/question.html", **base, related=[{"slug": "other", "title": "Other <q>"}],
        markdown_url="/hc/acme/fr/questions/q.md",
    )  # fmt: skip
    assert '<h2 id="related-title">Questions associées</h2>' in full
    assert '<a href="/hc/acme/en/questions/other" dir="auto">Other &lt;q&gt;</a>' in full
    assert '<link rel="alternate" type="text/markdown" href="/hc/acme/fr/questions/q.md">' in full
    results = [{"slug": "a", "title": "A"}, {"slug": "b", "title": "B", "snippet_html": None}]
    plain = await render(app, "hc/search.html", q="x", results=results, limit=20)
    assert 'class="snippet"' not in plain
    marked = [{"slug": "a", "title": "A", "snippet_html": Markup("the <mark>reset</mark> link")}]
    shown = await render(app, "hc/search.html", q="x", results=marked, limit=20)
    assert '<p class="snippet" dir="auto">the <mark>reset</mark> link</p>' in shown
