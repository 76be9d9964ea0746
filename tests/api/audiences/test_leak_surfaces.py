"""Issue 39, the read side: content with audiences (on the question or any category above it)
reaches only the readers its audiences name, on every surface that shows content to public
readers: the API's lists, single reads, categories and their counts, ``/answers``; the help
center's pages, search, sitemap, ``llms.txt``, Markdown twins. Anything else answers exactly
like content that does not exist. Content is written with SQL (the columns only), the way a
migration or the write side leaves it."""

from __future__ import annotations

from typing import Any

import jwt
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.audiences.visibility import refresh_audience_paths
from billing.plans import Plan
from tenancy.db import tenant_session
from tenancy.generations import bump
from tests.api.audiences.test_audiences import make
from tests.api.audiences.test_reader_tokens import claims, configured
from tests.api.helpcenter.helpers import category, enable, question
from tests.api.keys.helpers import SITE, as_key, make_public_key
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

WORD = "parcel"  # in every title: one search finds them all
TITLES = {
    "open": "Parcel tracking for everyone",
    "alpha": "Parcel alpha insurance",
    "beta": "Parcel beta customs",
    "nested": "Parcel nested warehouse",
}
# Who may read what: "nested" is for ['a'] inside a category for ['b'].
SEES = {
    "anonymous": {"open"},
    "a": {"open", "alpha"},
    "b": {"open", "beta"},
    "a,b": {"open", "alpha", "beta", "nested"},
}


class Site:
    def __init__(self, org: OrgClient, key: str, secret: str, made: dict[str, Any]) -> None:
        self.org = org
        self.key = key
        self.secret = secret
        self.made = made  # name -> question
        self.restricted_category: dict[str, Any] = made["category"]

    def token(self, reader: str) -> str | None:
        if reader == "anonymous":
            return None
        body = claims(self.org, audiences=reader.split(","))
        return jwt.encode(body, self.secret, algorithm="HS256", headers={"kid": "app"})

    async def api(self, reader: str, path: str) -> Any:
        token = self.token(reader)
        headers = {"Origin": SITE} | ({"X-Reader-Token": token} if token else {})
        return await as_key(self.org, self.key, "GET", path, headers=headers)

    def questions(self) -> dict[str, dict[str, Any]]:
        return {name: self.made[name] for name in TITLES}


async def write_audiences(engine: AsyncEngine, org: OrgClient, site: dict[str, Any]) -> None:
    async with tenant_session(engine, org.info.schema_name) as session:
        for name, audiences in (("alpha", ["a"]), ("beta", ["b"]), ("nested", ["a"])):
            await session.execute(
                text("UPDATE questions SET audiences = CAST(:a AS varchar(100)[]) WHERE id = :id"),
                {"a": audiences, "id": site[name]["id"]},
            )
        await session.execute(
            text("UPDATE categories SET audiences = CAST(:a AS varchar(100)[]) WHERE id = :id"),
            {"a": ["b"], "id": site["category"]["id"]},
        )
        await refresh_audience_paths(session)
        await session.commit()
    await bump(org.info.schema_name)


async def build(org_factory: OrgFactory, engine: AsyncEngine) -> Site:
    org = await org_factory(Plan.PRO)
    await make(org, name="A")
    await make(org, name="B")
    await enable(org)
    secret = await configured(org)
    key = (await make_public_key(org))["key"]
    restricted = await category(org, "Bravo warehouse")
    made: dict[str, Any] = {"category": restricted}
    for name, title in TITLES.items():
        fields = {"categoryId": restricted["id"]} if name == "nested" else {}
        made[name] = await question(org, title, f"The {name} answer about parcels.", **fields)
    await write_audiences(engine, org, made)
    return Site(org, key, secret, made)


def assert_only(
    site: Site, body: str, allowed: set[str], where: str, *, listed: bool = True
) -> None:
    """Exactly the allowed questions appear in ``body`` (``listed``: a page listing them, by
    title, or by slug in a sitemap); the others' titles, ids and slugs do not."""
    shown = "slug" if where.endswith(".xml") else "title"
    for name, q in site.questions().items():
        if name in allowed:
            assert not listed or q[shown] in body, (where, name)
        else:
            for value in (q["title"], q["id"], q["slug"]):
                assert value not in body, (where, name, value)


async def test_the_api_shows_each_reader_only_what_its_audiences_allow(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    org = site.org
    missing = await site.api("anonymous", "/questions/q_01J0000000000000000000000")
    assert missing.status_code == 404
    missing_body = await missing.get_json()
    for reader, allowed in SEES.items():
        where = f"reader {reader}"
        r = await site.api(reader, "/questions")
        assert r.status_code == 200, where
        listed = {q["title"] for q in (await r.get_json())["data"]}
        assert listed == {TITLES[n] for n in allowed}, where
        # The list's other path (a search, a category filter): the same rule.
        r = await site.api(reader, f"/questions?q={WORD}")
        listed = {q["title"] for q in (await r.get_json())["data"]}
        assert listed == {TITLES[n] for n in allowed}, (where, "q")
        r = await site.api(reader, f"/questions?category={site.restricted_category['id']}")
        listed = {q["title"] for q in (await r.get_json())["data"]}
        assert listed == {TITLES[n] for n in allowed if n == "nested"}, (where, "category")
        # Single reads, by id and by slug: a restricted one is a 404 like one that is not.
        for name, q in site.questions().items():
            for ref in (q["id"], q["slug"]):
                r = await site.api(reader, f"/questions/{ref}")
                if name in allowed:
                    assert r.status_code == 200, (where, name, ref)
                    assert (await r.get_json())["data"]["title"] == q["title"]
                else:
                    assert r.status_code == 404, (where, name, ref)
                    assert await r.get_json() == missing_body, (where, name, ref)
        # /answers: every leg, before the limit.
        r = await site.api(reader, f"/answers?q={WORD}&limit=20")
        assert r.status_code == 200, where
        body = (await r.get_data()).decode()
        assert_only(site, body, allowed, f"{where} /answers")
        found = {a["question"]["title"] for a in (await r.get_json())["data"]}
        assert found == {TITLES[n] for n in allowed}, (where, "answers")
        # Categories: the restricted one only for readers of 'b', counting what they see.
        r = await site.api(reader, "/categories")
        cats = {c["id"]: c for c in (await r.get_json())["data"]}
        restricted_id = site.restricted_category["id"]
        sees_b = "b" in reader.split(",")
        assert (restricted_id in cats) == sees_b, where
        default_count = sum(1 for n in allowed if n != "nested")
        default = next(c for c in cats.values() if c["id"] != restricted_id)
        assert default["questionCount"] == default_count, where
        r = await site.api(reader, f"/categories/{restricted_id}")
        assert r.status_code == (200 if sees_b else 404), where
        if sees_b:
            expected = 1 if "nested" in allowed else 0
            assert (await r.get_json())["data"]["questionCount"] == expected, where
        r = await site.api(reader, f"/answers?q={WORD}&category={restricted_id}")
        assert r.status_code == (200 if sees_b else 404), (where, "answers category")
    # A secret key sees everything, as before.
    r = await org.get("/questions")
    assert {q["title"] for q in (await r.get_json())["data"]} == set(TITLES.values())


async def test_a_readers_cached_body_is_never_served_to_another(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    alpha = site.made["alpha"]
    for path in ("/questions", f"/questions/{alpha['id']}", "/categories"):
        for first, second in (("a", "anonymous"), ("a,b", "b"), ("anonymous", "a")):
            r1 = await site.api(first, path)
            r2 = await site.api(second, path)
            again = await site.api(second, path)  # from the cache now
            assert (await r2.get_data()) == (await again.get_data()), (path, second)
            if path == "/questions":
                body = (await r2.get_data()).decode()
                assert_only(site, body, SEES[second], f"{path} {first}->{second}")
            if path.startswith("/questions/q_"):
                assert r1.status_code == (200 if "alpha" in SEES[first] else 404)
                assert r2.status_code == (200 if "alpha" in SEES[second] else 404)
            if path == "/categories":
                body = (await r2.get_data()).decode()
                shown = site.restricted_category["id"] in body
                assert shown == ("b" in second.split(",")), (first, second)


async def hc(org: OrgClient, path: str) -> tuple[int, str]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, (await r.get_data()).decode()


async def test_the_help_center_shows_anonymous_readers_public_content_only(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    org = site.org
    anonymous = SEES["anonymous"]
    restricted = site.restricted_category
    for path in (
        "/en",
        f"/en/search?q={WORD}",
        "/sitemaps/1.xml",
        "/llms.txt",
        "/llms-full.txt",
        "/en/llms.txt",
        "/en/llms-full.txt",
    ):
        status, body = await hc(org, path)
        assert status == 200, path
        assert_only(site, body, anonymous, path, listed=path != "/en")
        assert restricted["slug"] not in body and restricted["name"] not in body, path
        if path == "/en":  # one card, counting the one public question
            assert body.count('class="count"') == 1 and "Questions: 1<" in body
    status, index = await hc(org, "/sitemap.xml")
    assert status == 200 and "sitemaps/1.xml" in index
    _, missing = await hc(org, "/en/questions/no-such-question")
    _, missing_md = await hc(org, "/en/questions/no-such-question.md")
    for name, q in site.questions().items():
        for suffix in ("", ".md"):
            status, body = await hc(org, f"/en/questions/{q['slug']}{suffix}")
            if name in anonymous:
                assert status == 200 and q["title"] in body, (name, suffix)
                # Related questions and crumbs: public ones only.
                assert_only(site, body, anonymous, f"page {name}{suffix}")
            else:
                assert status == 404, (name, suffix)
                expected = missing_md if suffix else missing
                assert body == expected.replace("no-such-question", q["slug"]), (name, suffix)
    status, _ = await hc(org, f"/en/categories/{restricted['slug']}")
    assert status == 404
    status, body = await hc(org, "/en/categories/uncategorized")
    if status == 200:
        assert_only(site, body, anonymous, "default category page")


async def test_a_deleted_restricted_question_is_a_404_not_a_410(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    org = site.org
    alpha, opened = site.made["alpha"], site.made["open"]
    for q in (alpha, opened):
        assert (await org.delete(f"/questions/{q['id']}")).status_code == 204
    assert (await hc(org, f"/en/questions/{opened['slug']}"))[0] == 410
    status, body = await hc(org, f"/en/questions/{alpha['slug']}")
    assert status == 404 and alpha["title"] not in body


async def test_a_readers_api_answer_is_private_and_varies_on_the_token(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    site = await build(org_factory, engine)
    alpha = site.made["alpha"]
    for path in ("/questions", f"/questions/{alpha['id']}", f"/answers?q={WORD}"):
        r = await site.api("a", path)
        assert r.status_code == 200, path
        assert r.headers["Cache-Control"] == "private, no-cache", path
        assert "X-Reader-Token" in r.headers["Vary"], path
        r = await site.api("anonymous", path)
        assert "private" not in r.headers.get("Cache-Control", ""), path
        assert "X-Reader-Token" in r.headers.get("Vary", ""), path  # another token, another body
    r = await site.org.get("/questions")  # a secret key: no reader, nothing varies on it
    assert "X-Reader-Token" not in r.headers.get("Vary", "")
