"""A vote POSTed from another site is refused (issue 26): the CSRF token falls back to the
hashed address for a browser without the cookie, so a forger sharing the victim's address (an
office, a carrier NAT) could make a token that holds. A form POST whose ``Origin`` names another
site than the request's own (``Origin: null`` too), or that says ``Sec-Fetch-Site:
cross-site``, is a 403 page before the token is looked at; same-origin, same-site and ``none``
pass, and so does a browser that sends neither header."""

from __future__ import annotations

import re
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter.visitors import question_votes
from tenancy.db import tenant_session
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
SHARED_ADDRESS = ("198.51.100.23", 40000)  # the forger and the victim behind one NAT


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "How do I reset my password?", "Use the *reset* link.")


async def votes(engine: AsyncEngine, org: OrgClient) -> list[dict[str, Any]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        return [dict(r._mapping) for r in await session.execute(select(question_votes))]


async def address_token(app: Quart, url: str) -> str:
    """The token the forger's own cookie-less fetch gets: bound to the shared address."""
    forger = app.test_client(use_cookies=False)
    r = await forger.get(url, scope_base={"client": SHARED_ADDRESS})
    found = TOKEN.search(await r.get_data(as_text=True))
    assert found is not None
    return found.group(1)


async def post_vote(app: Quart, url: str, token: str, headers: dict[str, str]) -> Any:
    victim = app.test_client(use_cookies=False)  # SameSite=Lax: a cross-site POST has no cookie
    return await victim.post(
        f"{url}/feedback",
        form={"helpful": "no", "reason": "forged", "csrf_token": token},
        headers=headers,
        scope_base={"client": SHARED_ADDRESS},
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "http://localhost.evil.example"},
        {"Origin": "http://localhost:8080"},  # another port is another origin
        {"Origin": "null"},  # a sandboxed frame, a data: URL
        {"Origin": "not a url"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://localhost", "Sec-Fetch-Site": "cross-site"},
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"},
    ],
)
async def test_a_vote_from_another_site_is_403_and_writes_nothing(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    published: dict[str, Any],
    headers: dict[str, str],
) -> None:
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    r = await post_vote(app, url, await address_token(app, url), headers)
    assert r.status_code == 403
    assert r.headers["Content-Type"].startswith("text/html")
    body = await r.get_data(as_text=True)
    assert "another site" in body and "not recorded" in body
    assert "Content-Security-Policy" in r.headers and "Location" not in r.headers
    assert await votes(engine, org) == []


async def test_the_site_is_checked_before_the_token(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    """A cross-site POST is told so, whatever its token (it never reaches the token check)."""
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    r = await post_vote(app, url, "garbage", {"Origin": "https://evil.example"})
    assert r.status_code == 403
    assert "another site" in await r.get_data(as_text=True)
    r = await post_vote(app, url, "garbage", {})
    assert r.status_code == 403
    assert "another site" not in await r.get_data(as_text=True)  # the expired-form page
    assert await votes(engine, org) == []


@pytest.mark.parametrize(
    "headers",
    [
        {},  # an old browser: neither header
        {"Origin": "http://localhost"},
        {"Origin": "HTTP://LOCALHOST:80"},  # the same origin, spelled otherwise
        {"Origin": "https://localhost"},  # TLS ended by a proxy in front of the service
        {"Sec-Fetch-Site": "same-origin"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "none"},
        {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"},
    ],
)
async def test_a_vote_from_the_help_center_itself_is_kept(
    app: Quart,
    engine: AsyncEngine,
    org: OrgClient,
    published: dict[str, Any],
    headers: dict[str, str],
) -> None:
    """The same POST, token and address: only the site it comes from decides."""
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    token = await address_token(app, url)
    r = await post_vote(app, url, token, {**headers, "Origin": "https://evil.example"})
    assert r.status_code == 403
    assert await votes(engine, org) == []
    r = await post_vote(app, url, token, headers)
    assert r.status_code == 303
    [row] = await votes(engine, org)
    assert row["reason"] == "forged"
