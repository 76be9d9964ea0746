"""The help center's visitor cookie is signed (issue 26): ``random.YYYYMMDD.mac``, an HMAC with
``FAQ_SECRET_KEY`` bound to the day it was made. A cookie we did not sign (a forged one, or one
of the old unsigned format) is no visitor: the reader counts by its hashed address, views and
votes alike, and gets a fresh signed cookie. Pages that carry a per-visitor token or a
``Set-Cookie`` are ``Cache-Control: private, no-store``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter import feedback
from api.helpcenter.feedback import flush_views
from api.helpcenter.visitors import (
    VISITOR_COOKIE,
    new_visitor_token,
    question_views_daily,
    question_votes,
    valid_visitor_token,
)
from tasks.help_center import aggregate_views
from tenancy.db import tenant_session
from tenancy.settings import get_settings
from tests.api.helpcenter.helpers import enable, new_address, question
from tests.fixtures.orgs import OrgClient

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
FORGED = 50


def today() -> date:
    return datetime.now(UTC).date()


def forged_cookie() -> str:
    """What the old, unsigned format accepted: 32 URL-safe characters and a day (an earlier
    one, so that each would have been a visitor of its own)."""
    return f"{'f' * 22}{os.urandom(5).hex()}.{today() - timedelta(days=3):%Y%m%d}"


def as_client(address: str, cookie: str | None = None) -> dict[str, Any]:
    headers = {"Cookie": f"{VISITOR_COOKIE}={cookie}"} if cookie is not None else {}
    return {"headers": headers, "scope_base": {"client": (address, 40000)}}


def page_url(org: OrgClient, slug: str) -> str:
    return f"/hc/{org.slug}/en/questions/{slug}"


def set_cookie_value(response: Any) -> str | None:
    header = response.headers.get("Set-Cookie")
    if header is None:
        return None
    name, _, rest = header.partition("=")
    assert name == VISITOR_COOKIE
    return str(rest.split(";")[0])


async def views(engine: AsyncEngine, org: OrgClient) -> dict[str, int]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(select(question_views_daily))
        return {r.question_id: r.views for r in rows}


async def votes(engine: AsyncEngine, org: OrgClient) -> list[dict[str, Any]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        return [dict(r._mapping) for r in await session.execute(select(question_votes))]


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "Where is my parcel?", "On its way.")


@pytest.fixture
def secret_keys() -> Iterator[Any]:
    """Set ``FAQ_SECRET_KEY`` for a moment (the settings are read again), restored after."""
    before = os.environ["FAQ_SECRET_KEY"]

    def use(value: str) -> None:
        os.environ["FAQ_SECRET_KEY"] = value
        get_settings.cache_clear()

    try:
        yield use
    finally:
        use(before)


# ---- the token -------------------------------------------------------------------------------


def test_a_cookie_is_random_its_day_and_a_mac() -> None:
    token = new_visitor_token(date(2026, 3, 4))
    random, day, mac = token.split(".")
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", random)
    assert day == "20260304"
    assert re.fullmatch(r"[A-Za-z0-9_-]{22,}", mac)
    assert new_visitor_token(date(2026, 3, 4)).split(".")[0] != random


def test_only_a_cookie_this_service_signed_is_valid() -> None:
    day = today() - timedelta(days=3)
    token = new_visitor_token(day)
    assert valid_visitor_token(token) == token
    random, stamp, mac = token.split(".")
    other_random = new_visitor_token(day).split(".")[0]
    flipped = ("A" if mac[0] != "A" else "B") + mac[1:]
    for forged in (
        None,
        "",
        f"{random}.{stamp}",  # the old, unsigned format
        forged_cookie(),
        f"{random}.{day + timedelta(days=1):%Y%m%d}.{mac}",  # another day
        f"{other_random}.{stamp}.{mac}",  # another random part
        f"{random}.{stamp}.{flipped}",
        f"{random}.{stamp}.{mac[:-2]}",
        f"{random}.{stamp}.",
        f"{token}.x",
        f"{random}.20261399.{mac}",  # no such day
        token.replace(".", ":"),
    ):
        assert valid_visitor_token(forged) is None, forged
    # Bound to its day: a year and more ago (past the cookie's Max-Age), or days ahead, is
    # not one this service gave.
    assert valid_visitor_token(new_visitor_token(today() - timedelta(days=400))) is None
    assert valid_visitor_token(new_visitor_token(today() + timedelta(days=5))) is None
    assert valid_visitor_token(new_visitor_token(today() - timedelta(days=300))) is not None


def test_a_cookie_signed_with_the_previous_key_holds_during_a_rotation(
    secret_keys: Any,
) -> None:
    secret_keys("old-key-of-the-test")
    token = new_visitor_token(today())
    assert valid_visitor_token(token) == token
    secret_keys("new-key-of-the-test,old-key-of-the-test")
    assert valid_visitor_token(token) == token
    fresh = new_visitor_token(today())
    secret_keys("new-key-of-the-test")  # the rotation is over: the old key's cookies go
    assert valid_visitor_token(token) is None
    assert valid_visitor_token(fresh) == fresh  # signed with the newest key
    secret_keys("someone-elses-key")
    assert valid_visitor_token(fresh) is None


# ---- over HTTP -------------------------------------------------------------------------------


async def test_forged_cookies_viewing_a_question_count_as_one_visitor_the_address(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    address = new_address()
    reader = app.test_client(use_cookies=False)
    for _ in range(FORGED):
        r = await reader.get(
            page_url(org, published["slug"]), **as_client(address, forged_cookie())
        )
        assert r.status_code == 200
    await flush_views(app)
    await aggregate_views(engine)
    assert await views(engine, org) == {published["id"]: 1}


async def test_forged_cookies_voting_count_as_one_visitor_the_address(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    published: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feedback, "VOTES_PER_MINUTE", 10 * FORGED)  # this test is not about it
    address = new_address()
    url = page_url(org, published["slug"])
    reader = app.test_client(use_cookies=False)
    for n in range(FORGED):
        cookie = forged_cookie()
        r = await reader.get(url, **as_client(address, cookie))
        found = TOKEN.search(await r.get_data(as_text=True))
        assert found is not None
        form = {"helpful": "yes" if n % 2 else "no", "csrf_token": found.group(1)}
        r = await reader.post(f"{url}/feedback", form=form, **as_client(address, cookie))
        assert r.status_code == 303
    [row] = await votes(engine, org)  # the address's vote, replaced 49 times
    assert row["helpful"] is True


async def test_forged_cookies_cannot_choose_the_popular_questions(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    steered = await question(org, "Buy cheap watches here", "Spam.")
    for _ in range(3):  # three real readers, each at an address and with a cookie of its own
        cookie = new_visitor_token(today() - timedelta(days=2))
        r = await app.test_client(use_cookies=False).get(
            page_url(org, published["slug"]), **as_client(new_address(), cookie)
        )
        assert r.status_code == 200
    address = new_address()
    for _ in range(FORGED):
        r = await app.test_client(use_cookies=False).get(
            page_url(org, steered["slug"]), **as_client(address, forged_cookie())
        )
        assert r.status_code == 200
    await flush_views(app)
    await aggregate_views(engine)
    assert await views(engine, org) == {published["id"]: 3, steered["id"]: 1}
    r = await app.test_client().get(f"/hc/{org.slug}/en")
    body = await r.get_data(as_text=True)
    popular = body[body.index("popular-title") :]
    assert popular.index("Where is my parcel?") < popular.index("Buy cheap watches here")


async def test_a_forged_or_old_format_cookie_is_replaced_by_a_signed_one(
    app: Quart, org: OrgClient, published: dict[str, Any]
) -> None:
    url = page_url(org, published["slug"])
    reader = app.test_client(use_cookies=False)
    address = new_address()
    for cookie in (forged_cookie(), f"{'o' * 32}.{today():%Y%m%d}", "junk"):
        r = await reader.get(url, **as_client(address, cookie))
        assert r.status_code == 200
        fresh = set_cookie_value(r)
        assert fresh is not None and fresh != cookie
        assert valid_visitor_token(fresh) == fresh
        assert fresh.split(".")[1] == f"{today():%Y%m%d}"
    # A signed cookie is kept: no new one.
    r = await reader.get(url, **as_client(address, new_visitor_token(today())))
    assert "Set-Cookie" not in r.headers


async def test_pages_with_a_visitor_token_or_a_cookie_are_private_and_not_stored(
    app: Quart, org: OrgClient, published: dict[str, Any]
) -> None:
    url = page_url(org, published["slug"])
    reader = app.test_client()
    first = await reader.get(url)  # a new visitor: the form's token and its cookie
    assert first.status_code == 200 and "Set-Cookie" in first.headers
    assert first.headers["Cache-Control"] == "private, no-store"
    again = await reader.get(url)  # its cookie: no Set-Cookie, but a token bound to it
    assert "Set-Cookie" not in again.headers
    assert TOKEN.search(await again.get_data(as_text=True)) is not None
    assert again.headers["Cache-Control"] == "private, no-store"
    # Pages the same for everyone keep the help center's revalidated caching.
    thanks = await reader.get(f"{url}?feedback=thanks")
    assert "Set-Cookie" not in thanks.headers
    assert TOKEN.search(await thanks.get_data(as_text=True)) is None
    assert thanks.headers["Cache-Control"] == "no-cache"
    home = await reader.get(f"/hc/{org.slug}/en")
    assert "Set-Cookie" not in home.headers and home.headers["Cache-Control"] == "no-cache"
