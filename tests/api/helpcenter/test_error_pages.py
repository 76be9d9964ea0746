"""The help center's error pages and favicon (issue 32): a 404, a 410 (a deleted question) and a
503 (the store down) are pages of the help center in the visitor's language, with the header,
its search box and a link home; a favicon drawn from the org's colour."""

from __future__ import annotations

import asyncio
import html
import struct
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tenancy.db import tenant_session
from tenancy.settings import get_settings
from tests.api.helpcenter.helpers import enable, question, set_locales
from tests.fixtures.orgs import OrgClient, make_org

TIMEOUT_MS = 300


async def get(org: OrgClient, path: str) -> tuple[int, str, Any]:
    r = await org.client.get(f"/hc/{org.slug}{path}")
    return r.status_code, await r.get_data(as_text=True), r.headers


def is_help_center_page(org: OrgClient, body: str, locale: str) -> None:
    """The header with the search box of ``locale`` and a link to its home page."""
    assert f'<html lang="{locale}"' in body
    assert f'action="/hc/{org.slug}/{locale}/search"' in body
    assert f'href="/hc/{org.slug}/{locale}"' in body
    assert f'href="/hc/{org.slug}/theme.css?v=' in body
    assert '<meta name="robots" content="noindex">' in body


async def test_a_missing_page_is_a_404_page_in_the_visitors_language(org: OrgClient) -> None:
    await set_locales(org, ["en", "fr"])
    await enable(org, title="Acme Help")
    for path in ("/fr/questions/no-such-question", "/fr/categories/nope", "/fr/no/such/page"):
        status, body, headers = await get(org, path)
        assert status == 404, path
        assert headers["Content-Type"].startswith("text/html")
        assert headers["Cache-Control"] == "no-store"
        is_help_center_page(org, body, "fr")
        assert "Page introuvable" in body
        assert "Aller à l'accueil du centre d'aide" in html.unescape(body)
    # A locale the org does not have: the page in its default locale.
    status, body, _ = await get(org, "/de/questions/x")
    assert status == 404
    is_help_center_page(org, body, "en")
    assert "Page not found" in body
    # No help center there: a plain page, nothing of any org.
    r = await org.client.get("/hc/no-such-org-anywhere/fr/questions/x")
    body = await r.get_data(as_text=True)
    assert r.status_code == 404 and "Page not found" in body
    assert 'role="search"' not in body and 'href="/hc/theme.css"' in body


async def test_a_deleted_question_is_a_410_page(org: OrgClient, other_org: OrgClient) -> None:
    await set_locales(org, ["en", "fr"])
    await enable(org)
    await enable(other_org)
    published = await question(org, "Old news", "Gone.")
    draft = await question(org, "Never shown", "Draft.", status="draft")
    for q in (published, draft):
        assert (await org.delete(f"/questions/{q['id']}", scope="write")).status_code == 204
    status, body, headers = await get(org, f"/fr/questions/{published['slug']}")
    assert status == 410
    is_help_center_page(org, body, "fr")
    assert "Cette question a été supprimée" in body and "Old news" not in body
    assert headers["Cache-Control"] == "no-store"
    # A draft never was public: deleted, it is not found, as before.
    assert (await get(org, f"/en/questions/{draft['slug']}"))[0] == 404
    # Another org's deleted question is nothing here.
    assert (await get(other_org, f"/en/questions/{published['slug']}"))[0] == 404
    # A new question taking the slug is served again.
    again = await question(org, "Old news", "Back.")
    assert again["slug"] == published["slug"]
    assert (await get(org, f"/en/questions/{published['slug']}"))[0] == 200


@pytest.fixture
async def impatient_app() -> AsyncIterator[Quart]:
    from api.app import create_app

    settings = get_settings().model_copy(update={"faq_request_statement_timeout_ms": TIMEOUT_MS})
    app = create_app(settings)
    async with app.test_app():
        yield app


async def test_the_store_down_is_a_503_page(impatient_app: Quart, engine: AsyncEngine) -> None:
    """A statement cut by the request's timeout (the store not answering in time) is a 503
    page of the help center, with ``Retry-After``."""
    client: Any = impatient_app.test_client()
    org = await make_org(engine, client, Plan.STARTER)
    await set_locales(org, ["en", "fr"])
    await enable(org)
    await question(org, "Reset password", "Use the link.")
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(text("LOCK TABLE categories IN ACCESS EXCLUSIVE MODE"))
        status, body, headers = await asyncio.wait_for(get(org, "/fr"), 10)
    assert status == 503
    assert int(headers["Retry-After"]) >= 1
    is_help_center_page(org, body, "fr")
    assert "Temporairement indisponible" in body
    assert (await get(org, "/fr"))[0] == 200  # the lock gone, the page is back


def png_pixel(ico: bytes, x: int, y: int) -> tuple[int, int, int, int]:
    count = struct.unpack("<HHH", ico[:6])[2]
    assert count == 1
    width, height, _, _, _, bits, size, offset = struct.unpack("<BBBBHHII", ico[6:22])
    assert (width, height, bits) == (32, 32, 32)
    image = ico[offset : offset + size]
    assert image.startswith(b"\x89PNG\r\n\x1a\n")
    data, at = b"", 8
    while at < len(image):
        length = struct.unpack(">I", image[at : at + 4])[0]
        kind = image[at + 4 : at + 8]
        if kind == b"IDAT":
            data += image[at + 8 : at + 8 + length]
        at += 12 + length
    rows = zlib.decompress(data)
    start = y * (1 + 32 * 4) + 1 + x * 4
    r, g, b, a = rows[start : start + 4]
    return r, g, b, a


async def test_the_favicon_is_drawn_from_the_orgs_colour(
    org: OrgClient, other_org: OrgClient
) -> None:
    assert (await org.client.get(f"/hc/{org.slug}/favicon.ico")).status_code == 404  # off
    await enable(org, primaryColor="#aa3300")
    r = await org.client.get(f"/hc/{org.slug}/favicon.ico")
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/x-icon"
    icon = await r.get_data()
    assert png_pixel(icon, 16, 3) == (0xAA, 0x33, 0x00, 255)  # the colour
    assert png_pixel(icon, 16, 8)[:3] == (255, 255, 255)  # the ring, white on a dark colour
    assert png_pixel(icon, 0, 0)[3] < 128  # a rounded corner
    _, body, _ = await get(org, "/en")
    link = body.split('<link rel="icon" href="')[1].split('"')[0]
    assert link.startswith(f"/hc/{org.slug}/favicon.ico?v=")
    await enable(org, primaryColor="#ffd400")
    _, body, _ = await get(org, "/en")
    assert link not in body  # a new colour, a new URL
    r = await org.client.get(f"/hc/{org.slug}/favicon.ico")
    icon = await r.get_data()
    assert png_pixel(icon, 16, 3) == (0xFF, 0xD4, 0x00, 255)
    assert png_pixel(icon, 16, 8)[:3] == (0, 0, 0)  # black on a light colour
    # Another org's favicon is its own (its help center off: none).
    assert (await org.client.get(f"/hc/{other_org.slug}/favicon.ico")).status_code == 404
