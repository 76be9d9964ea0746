""" "Was this helpful?" over HTTP (issue 16): a plain HTML form with a CSRF token, 303 back to
the question page where the thanks shows, 403 for a bad token (nothing written), 404 where a
reader sees no question; one vote per visitor per question (a second one replaces the first);
the visitor is a cookie, else a hashed address, and neither is stored raw."""

from __future__ import annotations

import re
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter import feedback
from api.helpcenter.visitors import VISITOR_COOKIE, question_votes
from tenancy.db import tenant_session
from tenancy.redis import loop_client
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def page_url(org: OrgClient, slug: str, locale: str = "en") -> str:
    return f"/hc/{org.slug}/{locale}/questions/{slug}"


async def form_token(client: Any, url: str) -> str:
    """Open the question page as a reader and take the form's token."""
    r = await client.get(url)
    assert r.status_code == 200, url
    found = TOKEN.search(await r.get_data(as_text=True))
    assert found is not None, "no feedback form on the question page"
    return found.group(1)


async def vote(client: Any, url: str, token: str | None, helpful: str, reason: str = "") -> Any:
    form = {"helpful": helpful, "reason": reason}
    if token is not None:
        form["csrf_token"] = token
    return await client.post(f"{url}/feedback", form=form)


async def votes(engine: AsyncEngine, org: OrgClient) -> list[dict[str, Any]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(select(question_votes))
        return [dict(row._mapping) for row in rows]


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "How do I reset my password?", "Use the *reset* link.")


def cookie_of(client: Any) -> str:
    return str(next(c.value for c in client.cookie_jar if c.name == VISITOR_COOKIE))


async def test_a_vote_no_with_a_reason_shows_the_thanks_and_is_stored(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader = app.test_client()
    url = page_url(org, published["slug"])
    token = await form_token(reader, url)
    r = await vote(reader, url, token, "no", "  The steps for SSO are missing.  ")
    assert r.status_code == 303
    assert r.headers["Location"] == f"{url}?feedback=thanks#feedback"
    r = await reader.get(f"{url}?feedback=thanks")
    body = await r.get_data(as_text=True)
    assert r.status_code == 200
    assert "Thank you for your feedback" in body
    assert 'name="csrf_token"' not in body  # the form gave way to the thanks
    [row] = await votes(engine, org)
    assert row["question_id"] == published["id"]
    assert row["helpful"] is False
    assert row["reason"] == "The steps for SSO are missing."
    assert row["locale"] == "en"
    # Neither the cookie nor the address is stored: the visitor is a keyed hash.
    cookie = cookie_of(reader)
    assert re.fullmatch(r"[0-9a-f]{64}", row["visitor"])
    stored = " ".join(str(v) for v in row.values())
    assert cookie not in stored and cookie.split(".")[0] not in stored
    assert "127.0.0.1" not in stored


async def test_a_second_vote_replaces_the_first(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader = app.test_client()
    url = page_url(org, published["slug"])
    r = await vote(reader, url, await form_token(reader, url), "no", "Unclear")
    assert r.status_code == 303
    r = await vote(reader, url, await form_token(reader, url), "yes", "ignored on yes")
    assert r.status_code == 303
    [row] = await votes(engine, org)
    assert (row["helpful"], row["reason"]) == (True, None)
    # Another reader's vote is its own row.
    other = app.test_client()
    assert (await vote(other, url, await form_token(other, url), "no")).status_code == 303
    rows = await votes(engine, org)
    assert sorted(r["helpful"] for r in rows) == [False, True]
    assert len({r["visitor"] for r in rows}) == 2


async def test_a_bad_or_missing_token_is_403_and_writes_nothing(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader = app.test_client()
    url = page_url(org, published["slug"])
    token = await form_token(reader, url)
    issued, by_cookie, by_address = token.split(".")
    someone_else = app.test_client()
    their_token = await form_token(someone_else, url)
    for bad in (
        None,
        "",
        "garbage",
        f"{issued}.{by_address}.{by_cookie}",  # the MACs swapped
        f"{int(issued) + 1}.{by_cookie}.{by_address}",  # another time
        f"{int(issued) - 3 * 86_400}.{by_cookie}.{by_address}",
        their_token,  # bound to another visitor's cookie
    ):
        r = await vote(reader, url, bad, "no", "forged")
        assert r.status_code == 403, bad
        assert r.headers["Content-Type"].startswith("text/html")
        assert "not recorded" in await r.get_data(as_text=True)
    assert await votes(engine, org) == []


async def test_a_token_of_another_org_is_refused(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    await enable(org)
    await enable(other_org)
    mine = await question(org, "Same slug here", "A.")
    theirs = await question(other_org, "Same slug here", "B.")
    reader = app.test_client()
    token = await form_token(reader, page_url(org, mine["slug"]))
    r = await vote(reader, page_url(other_org, theirs["slug"]), token, "yes")
    assert r.status_code == 403
    assert await votes(engine, other_org) == []


async def test_no_question_a_reader_cannot_see_takes_a_vote(
    app: Quart, engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    live = await question(org, "Shipping times", "Two days.")
    draft = await question(org, "Secret plans", "Soon.", status="draft")
    reader = app.test_client()
    # Disabled help center: 404 (the page too), even with a token made for the org.
    assert (await reader.get(page_url(org, live["slug"]))).status_code == 404
    await enable(org)
    token = await form_token(reader, page_url(org, live["slug"]))
    for url in (
        page_url(org, draft["slug"]),
        page_url(org, "no-such-question"),
        page_url(org, live["slug"], locale="de"),  # not an enabled locale
        f"/hc/no-such-org-{org.slug}/en/questions/{live['slug']}",
        page_url(other_org, live["slug"]),  # another org's help center, disabled
    ):
        r = await vote(reader, url, token, "yes")
        assert r.status_code == 404, url
        assert r.headers["Content-Type"].startswith("text/html")
    await enable(other_org)
    r = await vote(reader, page_url(other_org, live["slug"]), token, "yes")
    assert r.status_code in (403, 404)  # not the other org's question, nor its token
    assert await votes(engine, org) == [] and await votes(engine, other_org) == []


async def test_a_bad_vote_is_400_and_a_long_reason_is_refused(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader = app.test_client()
    url = page_url(org, published["slug"])
    token = await form_token(reader, url)
    assert (await vote(reader, url, token, "maybe")).status_code == 400
    assert (await vote(reader, url, token, "no", "x" * 501)).status_code == 400
    assert await votes(engine, org) == []
    assert (await vote(reader, url, token, "no", "x" * 500 + "\x00")).status_code == 303
    [row] = await votes(engine, org)
    assert row["reason"] == "x" * 500


async def test_without_a_cookie_the_visitor_is_the_hashed_address(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    url = page_url(org, published["slug"])
    for helpful in ("no", "yes"):
        cookieless = app.test_client(use_cookies=False)
        r = await vote(cookieless, url, await form_token(cookieless, url), helpful)
        assert r.status_code == 303
    [row] = await votes(engine, org)  # one visitor: the same address, replaced
    assert row["helpful"] is True and "127.0.0.1" not in row["visitor"]
    # A browser with a cookie is another visitor than its address.
    browser = app.test_client()
    assert (await vote(browser, url, await form_token(browser, url), "no")).status_code == 303
    assert len(await votes(engine, org)) == 2


async def test_the_visitor_cookie_is_http_only_lax_and_scoped_to_the_org(
    app: Quart, org: OrgClient, published: dict[str, Any]
) -> None:
    url = page_url(org, published["slug"])
    r = await app.test_client().get(url)
    cookie = r.headers["Set-Cookie"]
    assert cookie.startswith(f"{VISITOR_COOKIE}=")
    attributes = {a.strip().split("=")[0].lower(): a for a in cookie.split(";")[1:]}
    assert "httponly" in attributes and "secure" not in attributes
    assert attributes["samesite"].strip() == "SameSite=Lax"
    assert attributes["path"].strip() == f"Path=/hc/{org.slug}"
    assert int(attributes["max-age"].split("=")[1]) >= 180 * 86_400
    r = await app.test_client().get(url, scheme="https")
    assert "Secure" in r.headers["Set-Cookie"]
    # A reader who has the cookie is not given another.
    reader = app.test_client()
    await reader.get(url)
    assert "Set-Cookie" not in (await reader.get(url)).headers


async def test_votes_are_rate_limited_per_address(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    published: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feedback, "VOTES_PER_MINUTE", 3)
    redis = loop_client()

    async def forget_counts() -> None:
        async for key in redis.scan_iter(match="faq:hc:votes:*"):
            await redis.delete(key)

    await forget_counts()
    try:
        url = page_url(org, published["slug"])
        statuses: list[int] = []
        while 429 not in statuses and len(statuses) < 8:  # a new minute starts a new count
            reader = app.test_client()
            r = await vote(reader, url, await form_token(reader, url), "yes")
            statuses.append(r.status_code)
        assert statuses[:3] == [303, 303, 303] and statuses[-1] == 429, statuses
        assert len(await votes(engine, org)) == statuses.count(303)  # a refused vote is not kept
        keys = [k async for k in redis.scan_iter(match="faq:hc:votes:*")]
        assert keys and all(0 < ttl <= 120 for ttl in [await redis.ttl(k) for k in keys])
        assert not any(b"127.0.0.1" in k for k in keys)
    finally:
        await forget_counts()


async def test_votes_do_not_change_the_cached_pages(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    """A vote writes no content: the org's content generation (cached pages) stays."""
    redis = loop_client()
    key = f"faq:gen:{org.info.schema_name}"
    reader = app.test_client()
    url = page_url(org, published["slug"])
    token = await form_token(reader, url)
    before = await redis.get(key)
    assert (await vote(reader, url, token, "yes")).status_code == 303
    assert await redis.get(key) == before
    async with tenant_session(engine, org.info.schema_name) as session:
        assert (await session.execute(text("SELECT count(*) FROM question_votes"))).scalar() == 1
