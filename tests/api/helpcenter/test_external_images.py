"""``helpCenter.externalImages`` (issue 26): answers could embed images from any host, so a write
key could plant tracking pixels on every visitor's page. Off by default: an image from another
host is a link to it, and the pages' Content-Security-Policy allows images only from the
service (``img-src 'self'``); on, ``https`` images show and the policy allows ``https:``."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

from tests.api.helpcenter.conftest import BrowserPage
from tests.api.helpcenter.helpers import category, enable, question
from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ANSWER = (
    'Our logo: ![Acme logo](https://cdn.example.com/logo.png "The logo")\n\n'
    "A pixel: ![](http://tracker.example/p.gif)\n\n"
    "Ours: ![a chart](/hc/static/chart.png) and ![rel](images/x.png)\n\n"
    "Scheme-relative: ![proto](//evil.example/p.png)\n\n"
    "Data: ![data](data:image/png;base64,AAAA)\n\n"
    "Upper case: ![up](HTTPS://CDN.EXAMPLE.COM/UP.PNG)\n\n"
    "Linked: [![inner](https://cdn.example.com/in.png)](https://acme.example/page)"
)
OTHER_HOSTS = ("cdn.example.com", "CDN.EXAMPLE.COM", "tracker.example", "evil.example")


def img_srcs(body: str) -> list[str]:
    return re.findall(r'<img [^>]*src="([^"]*)"', body)


def img_src_policy(headers: Any) -> str:
    policy = headers["Content-Security-Policy"]
    found = re.search(r"img-src ([^;]*)", policy)
    assert found is not None, policy
    return found.group(1).strip()


async def page(org: OrgClient, path: str) -> tuple[int, str, Any]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, (await r.get_data()).decode(), r.headers


async def test_the_setting_is_off_by_default_validated_and_patched(org: OrgClient) -> None:
    r = await org.get("/settings")
    assert (await r.get_json())["data"]["helpCenter"]["externalImages"] is False
    for bad in ("yes", 1, None, [], {}):
        r = await org.patch("/settings", json={"helpCenter": {"externalImages": bad}})
        assert r.status_code == 400, bad
        error = (await r.get_json())["error"]
        assert error["code"] == "validation_failed"
        assert error["details"] == [
            {"field": "helpCenter.externalImages", "issue": "must be a boolean"}
        ]
    r = await org.patch("/settings", json={"helpCenter": {"externalImages": True}})
    assert r.status_code == 200
    hc = (await r.get_json())["data"]["helpCenter"]
    assert hc["externalImages"] is True and hc["enabled"] is False  # the rest kept
    r = await org.get("/settings", scope="read")
    assert (await r.get_json())["data"]["helpCenter"]["externalImages"] is True
    r = await org.patch("/settings", json={"helpCenter": {"title": "Kept"}})
    assert (await r.get_json())["data"]["helpCenter"]["externalImages"] is True


async def test_the_setting_is_in_the_openapi_document(org: OrgClient) -> None:
    r = await org.client.get("/openapi.json")
    schemas = (await r.get_json())["components"]["schemas"]
    out = next(s for name, s in schemas.items() if name.startswith("HelpCenterOut"))
    assert out["properties"]["externalImages"]["type"] == "boolean"
    assert "externalImages" in out["required"]


async def test_off_images_from_other_hosts_are_links_and_the_policy_is_self(
    org: OrgClient,
) -> None:
    await enable(org)
    q = await question(org, "Images", ANSWER)
    status, body, headers = await page(org, f"/en/questions/{q['slug']}")
    assert status == 200
    assert img_srcs(body) == ["/hc/static/chart.png", "images/x.png"]  # the service's own
    assert not [h for h in OTHER_HOSTS if re.search(rf"<img [^>]*{re.escape(h)}", body)]
    assert (
        '<a href="https://cdn.example.com/logo.png" title="The logo" '
        'rel="noopener noreferrer">Acme logo</a>'
    ) in body
    # No alt text: the URL is the link's text.
    assert (
        '<a href="http://tracker.example/p.gif" rel="noopener noreferrer">'
        "http://tracker.example/p.gif</a>"
    ) in body
    assert '<a href="//evil.example/p.png" rel="noopener noreferrer">proto</a>' in body
    assert "data:image" not in body  # nh3 keeps no data: URL, as an image or a link
    assert img_src_policy(headers) == "'self'"
    # Every other page of the org, and the 404 page, have the same strict policy.
    c = await category(org, "Pictures")
    for path in ("/en", f"/en/categories/{c['slug']}", "/en/search?q=logo", "/en/nothing",
                 "/sitemap.xml", "/robots.txt", "/theme.css"):  # fmt: skip
        _, _, headers = await page(org, path)
        assert img_src_policy(headers) == "'self'", path


async def test_on_https_images_show_and_the_policy_allows_https(org: OrgClient) -> None:
    await enable(org)
    q = await question(org, "Images", ANSWER)
    path = f"/en/questions/{q['slug']}"
    assert img_src_policy((await page(org, path))[2]) == "'self'"  # cached while off
    await enable(org, externalImages=True)
    status, body, headers = await page(org, path)
    assert status == 200
    assert img_srcs(body) == [
        "https://cdn.example.com/logo.png",
        "/hc/static/chart.png",
        "images/x.png",
        "HTTPS://CDN.EXAMPLE.COM/UP.PNG",
        "https://cdn.example.com/in.png",
    ]
    # http (the policy blocks it on an https page anyway) and scheme-relative: still links.
    assert '<a href="http://tracker.example/p.gif"' in body
    assert '<a href="//evil.example/p.png" rel="noopener noreferrer">proto</a>' in body
    assert img_src_policy(headers) == "'self' https:"
    for other in ("/en", "/en/search?q=logo"):
        assert img_src_policy((await page(org, other))[2]) == "'self' https:", other
    # The 404 page, the stylesheet and the sitemap keep the strict one.
    for strict in ("/en/questions/missing", "/theme.css", "/sitemap.xml", "/robots.txt"):
        assert img_src_policy((await page(org, strict))[2]) == "'self'", strict
    # Off again: links again, at once (the rendered answer is cached per setting).
    await enable(org, externalImages=False)
    status, body, headers = await page(org, path)
    assert img_srcs(body) == ["/hc/static/chart.png", "images/x.png"]
    assert img_src_policy(headers) == "'self'"


def _api(server: LiveServer, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{server.base_url}/api/v1/{server.org_slug}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Authorization": f"Bearer {server.admin_key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=20) as r:
        return json.loads(r.read() or b"null")


def test_a_browser_requests_no_image_from_another_host_unless_allowed(
    live_server: LiveServer,  # noqa: F811
    browser_page: BrowserPage,
) -> None:
    s = live_server
    _api(s, "PATCH", "/settings", {"helpCenter": {"enabled": True}})
    categories = _api(s, "GET", "/categories?limit=100")["data"]
    default = next(c["id"] for c in categories if c["isDefault"])
    q = _api(s, "POST", "/questions", {
        "title": "Where is the pixel?", "status": "published", "categoryId": default,
        "answer": "![pixel](https://tracker.example/pixel.gif)",
    })["data"]  # fmt: skip
    url = f"{s.base_url}/hc/{s.org_slug}/en/questions/{q['slug']}"
    try:
        browser_page.page.goto(url, wait_until="networkidle")
        assert browser_page.outside(s.base_url) == []
        link = browser_page.page.get_by_role("link", name="pixel")
        assert link.get_attribute("href") == "https://tracker.example/pixel.gif"
        _api(s, "PATCH", "/settings", {"helpCenter": {"externalImages": True}})
        browser_page.page.goto(url, wait_until="networkidle")
        assert browser_page.outside(s.base_url) == ["https://tracker.example/pixel.gif"]
    finally:
        _api(s, "PATCH", "/settings", {"helpCenter": {"externalImages": False}})
        _api(s, "DELETE", f"/questions/{q['id']}")
