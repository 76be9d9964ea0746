"""Refusals of the help center in the visitor's language (issue 32): the feedback form's 403s
(sent from another site, an expired form), 400 (a vote it cannot read), 404 and 429 (too many
votes) are the help center's error page in the URL's locale with the org's look; the rate
limits' 429 (answered before any org lookup) is in the language of the URL's locale too, right
to left in Arabic, English for a locale without a catalog."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter.visitors import REASON_MAX, question_votes
from tenancy.db import tenant_session
from tests.api.helpcenter.helpers import enable, new_address, question, set_locales
from tests.api.helpcenter.test_hc_limits import limited_app
from tests.fixtures.orgs import OrgClient, make_org

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
SITE_TITLE = "Acme Help"


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await set_locales(org, ["en", "fr", "ar"])
    await enable(org, title=SITE_TITLE)
    return await question(org, "How do I reset my password?", "Use the *reset* link.")


def question_url(org: OrgClient, locale: str, slug: str) -> str:
    return f"/hc/{org.slug}/{locale}/questions/{slug}"


async def form_token(client: Any, url: str, address: str) -> str:
    r = await client.get(url, scope_base={"client": (address, 40000)})
    assert r.status_code == 200, url
    found = TOKEN.search(await r.get_data(as_text=True))
    assert found is not None, "no feedback form on the question page"
    return found.group(1)


async def post_vote(
    client: Any,
    url: str,
    address: str,
    form: dict[str, str],
    headers: dict[str, str] | None = None,
) -> Any:
    return await client.post(
        f"{url}/feedback", form=form, headers=headers or {}, scope_base={"client": (address, 40000)}
    )


async def votes(engine: AsyncEngine, org: OrgClient) -> list[dict[str, Any]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        return [dict(r._mapping) for r in await session.execute(select(question_votes))]


async def assert_org_error_page(
    r: Any, org: OrgClient, status: int, locale: str, title: str, message: str
) -> str:
    """The help center's error page of ``org`` in ``locale``: its header and search box, the
    title and message translated, never cached, with the help center's headers."""
    body = await r.get_data(as_text=True)
    text = html.unescape(body)
    assert r.status_code == status
    assert r.headers["Content-Type"].startswith("text/html")
    assert r.headers["Cache-Control"] == "no-store"
    assert "default-src 'none'" in r.headers["Content-Security-Policy"]
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["X-Request-Id"]
    assert "Location" not in r.headers
    direction = "rtl" if locale == "ar" else "ltr"
    assert f'<html lang="{locale}" dir="{direction}">' in body
    assert f"<title>{title} · {SITE_TITLE}</title>" in text
    assert f"<h1>{title}</h1>" in text
    assert f"<p>{message}</p>" in text
    assert f'action="/hc/{org.slug}/{locale}/search"' in body  # the org's header, search box
    assert f'href="/hc/{org.slug}/theme.css?v=' in body
    assert f'href="/hc/{org.slug}/{locale}"' in body  # the link home
    assert '<meta name="robots" content="noindex">' in body
    return text


async def test_a_vote_from_another_site_is_refused_in_the_visitors_language(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader, address = app.test_client(), new_address()
    for locale, title, message in (
        (
            "fr",
            "Ce formulaire a été envoyé depuis un autre site",
            "Votre vote n'a pas été enregistré. Votez sur la page de la question, dans ce "
            "centre d'aide.",
        ),
        (
            "ar",
            "أُرسل هذا النموذج من موقع آخر",
            "لم يُسجَّل تصويتك. صوِّت من صفحة السؤال في مركز المساعدة هذا.",
        ),
    ):
        url = question_url(org, locale, published["slug"])
        token = await form_token(reader, url, address)
        form = {"helpful": "no", "reason": "forged", "csrf_token": token}
        r = await post_vote(reader, url, address, form, {"Origin": "https://evil.example"})
        text = await assert_org_error_page(r, org, 403, locale, title, message)
        assert "another site" not in text and "not recorded" not in text
    assert await votes(engine, org) == []


async def test_an_expired_form_and_an_unreadable_vote_are_refused_in_french(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader, address = app.test_client(), new_address()
    url = question_url(org, "fr", published["slug"])
    token = await form_token(reader, url, address)
    r = await post_vote(reader, url, address, {"helpful": "yes", "csrf_token": "garbage"})
    await assert_org_error_page(
        r,
        org,
        403,
        "fr",
        "Ce formulaire a expiré",
        "Votre vote n'a pas été enregistré. Rechargez la page de la question et votez à nouveau.",
    )
    for form in (
        {"helpful": "maybe", "csrf_token": token},
        {"helpful": "no", "reason": "x" * (REASON_MAX + 1), "csrf_token": token},
    ):
        r = await post_vote(reader, url, address, form)
        await assert_org_error_page(
            r,
            org,
            400,
            "fr",
            "Votre vote n'a pas pu être lu",
            f"Choisissez Oui ou Non\u00a0; la raison ne doit pas dépasser {REASON_MAX} caractères.",
        )
    assert await votes(engine, org) == []


async def test_a_vote_for_no_question_is_a_french_404(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    reader, address = app.test_client(), new_address()
    token = await form_token(reader, question_url(org, "fr", published["slug"]), address)
    form = {"helpful": "yes", "csrf_token": token}
    r = await post_vote(reader, question_url(org, "fr", "no-such-question"), address, form)
    await assert_org_error_page(
        r,
        org,
        404,
        "fr",
        "Page introuvable",
        "Cette question n'existe pas dans ce centre d'aide.",
    )
    # A locale the org does not have: its default locale's page, as for any other 404.
    r = await post_vote(reader, question_url(org, "de", published["slug"]), address, form)
    await assert_org_error_page(
        r, org, 404, "en", "Page not found", "There is no such question in this help center."
    )
    assert await votes(engine, org) == []


async def test_too_many_votes_is_a_french_429_with_retry_after(
    app: Quart, engine: AsyncEngine, org: OrgClient, published: dict[str, Any]
) -> None:
    """Past ``VOTES_PER_MINUTE`` from one address (a vote replaces the visitor's last one)."""
    reader, address = app.test_client(), new_address()
    url = question_url(org, "fr", published["slug"])
    form = {"helpful": "yes", "csrf_token": await form_token(reader, url, address)}
    statuses: list[int] = []
    while 429 not in statuses and len(statuses) < 70:  # a new minute starts a new count
        r = await post_vote(reader, url, address, form)
        statuses.append(r.status_code)
    assert set(statuses[:-1]) == {303} and statuses[-1] == 429, statuses
    assert r.headers["Retry-After"] == "60"
    await assert_org_error_page(
        r,
        org,
        429,
        "fr",
        "Trop de votes",
        "Veuillez patienter une minute, puis réessayer.",
    )
    assert len(await votes(engine, org)) == 1


# ---- the rate limits' page (ASGI, before any org lookup) -----------------------------------


async def flood(app: Quart, path: str, address: str, admitted: int) -> Any:
    """``admitted`` requests of ``path`` from ``address`` pass the limits, the next is 429."""
    client = app.test_client()
    for n in range(admitted):
        r = await client.get(path, scope_base={"client": (address, 40000)})
        assert r.status_code != 429, (path, n)
    r = await client.get(path, scope_base={"client": (address, 40000)})
    assert r.status_code == 429, path
    return r


async def assert_limits_page(r: Any, lang: str, direction: str, title: str, message: str) -> None:
    body = await r.get_data(as_text=True)
    text = html.unescape(body)
    assert r.status_code == 429
    assert r.headers["Content-Type"].startswith("text/html")
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    assert r.headers["Cache-Control"] == "no-store"
    assert "default-src 'none'" in r.headers["Content-Security-Policy"]
    assert r.headers["X-Request-Id"]
    assert f'<html lang="{lang}" dir="{direction}">' in body
    assert f"<title>{title}</title>" in text
    assert f"<h1>{title}</h1>" in text and f"<p>{message}</p>" in text
    assert 'href="/hc/theme.css"' in body  # the help center's look, no org's header
    assert 'role="search"' not in body
    assert '<meta name="robots" content="noindex">' in body


async def test_the_rate_limits_page_is_in_the_language_of_the_urls_locale(
    engine: AsyncEngine,
) -> None:
    cases = [
        (
            "fr",
            "fr",
            "ltr",
            "Trop de requêtes",
            "Trop de requêtes depuis votre réseau. Veuillez réessayer dans quelques secondes.",
        ),
        (
            "ar",
            "ar",
            "rtl",
            "طلبات كثيرة جدًا",
            "طلبات كثيرة جدًا من شبكتك. يُرجى المحاولة مرة أخرى بعد بضع ثوانٍ.",
        ),
        (  # a locale the org does not have: the language of its catalog
            "fr-CA",
            "fr",
            "ltr",
            "Trop de requêtes",
            "Trop de requêtes depuis votre réseau. Veuillez réessayer dans quelques secondes.",
        ),
        (  # no catalog: English
            "ja",
            "en",
            "ltr",
            "Too many requests",
            "Too many requests from your network. Please try again in a few seconds.",
        ),
    ]
    async with limited_app() as app:
        for locale, lang, direction, title, message in cases:
            org = await make_org(engine, app.test_client())  # its own budget per case
            await set_locales(org, ["en", "fr", "ar"])
            await enable(org, title=SITE_TITLE)
            r = await flood(app, f"/hc/{org.slug}/{locale}", new_address(), 10)
            await assert_limits_page(r, lang, direction, title, message)
            assert SITE_TITLE not in await r.get_data(as_text=True)
        # A path without a locale: English.
        org = await make_org(engine, app.test_client())
        await enable(org)
        r = await flood(app, f"/hc/{org.slug}/theme.css", new_address(), 10)
        await assert_limits_page(
            r,
            "en",
            "ltr",
            "Too many requests",
            "Too many requests from your network. Please try again in a few seconds.",
        )


async def test_a_busy_help_center_is_told_in_the_visitors_language(engine: AsyncEngine) -> None:
    """The org's budget (distinct addresses) refused in French and in Arabic."""
    async with limited_app() as app:
        org = await make_org(engine, app.test_client())
        await set_locales(org, ["en", "fr", "ar"])
        await enable(org)
        client = app.test_client()
        for n in range(20):
            path = f"/hc/{org.slug}/{'fr' if n % 2 else 'ar'}"
            r = await client.get(path, scope_base={"client": (new_address(), 40000)})
            assert r.status_code == 200, n
        r = await client.get(f"/hc/{org.slug}/fr", scope_base={"client": (new_address(), 40000)})
        await assert_limits_page(
            r,
            "fr",
            "ltr",
            "Trop de requêtes",
            "Ce centre d'aide est très sollicité en ce moment. Veuillez réessayer dans quelques "
            "secondes.",
        )
        r = await client.get(f"/hc/{org.slug}/ar", scope_base={"client": (new_address(), 40000)})
        await assert_limits_page(
            r,
            "ar",
            "rtl",
            "طلبات كثيرة جدًا",
            "مركز المساعدة هذا مشغول جدًا الآن. يُرجى المحاولة مرة أخرى بعد بضع ثوانٍ.",
        )
