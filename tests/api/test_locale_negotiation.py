"""The locale a read is served in: unit tests of ``api/locales.py`` ``negotiate`` (``?locale=``
first, then ``Accept-Language`` as werkzeug parses it (quality values, malformed parts), with
fallback from a region or script tag to its language, else the org's default), then every read
declared ``@localized`` (issue 40) over HTTP: the same refusal of a locale the org does not
serve, the same negotiation, the same OpenAPI parameters."""

from __future__ import annotations

import re
from typing import Any

import pytest
from quart import Quart
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header

from api.http.binding import is_localized
from api.locales import LocaleNotEnabled, Negotiated, negotiate
from tests.api.keys.helpers import make_public_key
from tests.api.questions.helpers import create, default_category
from tests.fixtures.orgs import OrgClient

ENABLED = ("en", "fr", "de", "pt-BR", "zh-Hant")


def chosen(header: str | None, enabled: tuple[str, ...] = ENABLED, default: str = "en") -> str:
    accepted = None if header is None else parse_accept_header(header, LanguageAccept)
    return negotiate(None, accepted, enabled, default).locale


@pytest.mark.parametrize(
    ("header", "locale"),
    [
        ("fr", "fr"),
        ("FR", "fr"),
        ("fr-CH", "fr"),  # region falls back to the language
        ("fr-ch, de;q=0.5", "fr"),
        ("de;q=0.5, fr;q=0.9", "fr"),  # quality, not order, decides
        ("es, de;q=0.2", "de"),  # the first that an enabled locale serves
        ("de;q=0, fr;q=0.1", "fr"),  # q=0: never
        ("de;q=0", "en"),
        ("pt-br", "pt-BR"),
        ("pt", "pt-BR"),  # a language takes an enabled regional variant
        ("zh-Hant-TW", "zh-Hant"),
        ("*", "en"),
        ("es, ja", "en"),  # nothing enabled: the org's default
        ("", "en"),
        (None, "en"),
        ("de;q=abc, ,;;, fr;q=0.4", "fr"),  # malformed parts are ignored
        ("x" * 60 + ", de", "de"),
    ],
)
def test_accept_language(header: str | None, locale: str) -> None:
    assert chosen(header) == locale


def test_the_org_default_is_the_fallback_not_the_first_enabled() -> None:
    assert chosen("ja", enabled=("en", "fr"), default="fr") == "fr"
    assert chosen("*", enabled=("en", "fr"), default="fr") == "fr"


def test_the_exact_region_wins_over_the_language() -> None:
    assert chosen("fr-CA, fr;q=0.9", enabled=("en", "fr", "fr-CA")) == "fr-CA"
    assert chosen("fr-BE", enabled=("en", "fr", "fr-CA")) == "fr"


def test_a_locale_parameter_wins_and_is_canonicalised() -> None:
    header = parse_accept_header("de", LanguageAccept)
    assert negotiate("PT-br", header, ENABLED, "en") == Negotiated("pt-BR", varies=False)
    assert negotiate(None, header, ENABLED, "en") == Negotiated("de", varies=True)
    assert negotiate(None, None, ENABLED, "en") == Negotiated("en", varies=True)


@pytest.mark.parametrize("tag", ["es", "xx", "fr_FR", "", "fr-CH", "x" * 40])
def test_a_locale_parameter_not_enabled_is_refused(tag: str) -> None:
    with pytest.raises(LocaleNotEnabled):
        negotiate(tag, None, ENABLED, "en")


# ---- every read of content, over HTTP (issue 40) -------------------------------------------

# Each read that returns content, by endpoint: its path ({q}: a question, {c}: a category).
LOCALIZED_READS = {
    "api.questions.list_questions": "/questions",
    "api.questions.get_question": "/questions/{q}",
    "api.categories.list_categories": "/categories",
    "api.categories.get_category": "/categories/{c}",
    "api.answers.find_answers": "/answers?q=remboursement",
    "api.answers.similar_questions": "/questions/{q}/similar",
}


def test_the_reads_of_content_are_the_views_declared_localized(app: Quart) -> None:
    declared = {name for name, view in app.view_functions.items() if is_localized(view)}
    assert declared == set(LOCALIZED_READS)


async def french_org(org: OrgClient) -> dict[str, str]:
    """en (default) and fr; two published questions about refunds and their category, all
    translated to French."""
    r = await org.patch("/settings", json={"locales": ["en", "fr"], "defaultLocale": "en"})
    assert r.status_code == 200, await r.get_json()
    category = await default_category(org)
    r = await org.request(
        "PUT", f"/categories/{category}/translations/fr", json={"name": "Général"}, scope="write"
    )
    assert r.status_code in (200, 201), await r.get_json()
    ids = []
    for title, french in (
        ("Refunds", "Remboursements"),
        ("Refund delays", "Délais de remboursement"),
    ):
        question = await create(
            org, category, title=title, answer="In 30 days.", status="published"
        )
        body = {"title": french, "answer": "Sous 30 jours.", "status": "published"}
        r = await org.request(
            "PUT", f"/questions/{question['id']}/translations/fr", json=body, scope="write"
        )
        assert r.status_code in (200, 201), await r.get_json()
        ids.append(question["id"])
    return {"q": ids[0], "c": category}


def with_locale(path: str, made: dict[str, str], locale: str) -> tuple[str, dict[str, str]]:
    base, _, query = path.format(**made).partition("?")
    args = dict(part.split("=") for part in query.split("&") if part)
    return base, {**args, "locale": locale}


@pytest.mark.parametrize("endpoint", sorted(LOCALIZED_READS))
async def test_every_localized_read_refuses_an_unserved_locale_with_the_same_400(
    org: OrgClient, endpoint: str
) -> None:
    made = await french_org(org)
    expected = await org.get("/questions", query={"locale": "xx"}, scope="read")
    refusal = await expected.get_json()
    assert expected.status_code == 400
    assert refusal["error"]["code"] == "validation_failed"
    assert [d["field"] for d in refusal["error"]["details"]] == ["locale"]
    publishable = (await make_public_key(org))["key"]
    for locale in ("xx", "de", "fr_FR", ""):
        path, query = with_locale(LOCALIZED_READS[endpoint], made, locale)
        for key in (org.keys["read"], publishable):
            r = await org.client.get(
                f"/api/v1/{org.slug}{path}",
                query_string=query,
                headers={"Authorization": f"Bearer {key}"},
            )
            if endpoint == "api.answers.similar_questions" and key == publishable:
                assert r.status_code == 403  # editors' read: the scope is checked first
                continue
            assert r.status_code == 400, (path, query, await r.get_json())
            assert await r.get_json() == refusal, (path, query)


@pytest.mark.parametrize("endpoint", sorted(LOCALIZED_READS))
async def test_every_localized_read_serves_the_negotiated_locale(
    org: OrgClient, endpoint: str
) -> None:
    made = await french_org(org)
    path, query = with_locale(LOCALIZED_READS[endpoint], made, "FR")
    by_parameter = await org.get(path, query=query, scope="read")
    body = await by_parameter.get_json()
    assert by_parameter.status_code == 200, body
    assert "Accept-Language" not in by_parameter.headers.get("Vary", "")
    del query["locale"]
    by_header = await org.get(path, query=query, scope="read", headers={"Accept-Language": "fr"})
    assert by_header.status_code == 200
    assert await by_header.get_json() == body
    assert "Accept-Language" in by_header.headers["Vary"]
    # A header naming nothing the org serves is no refusal: the org's default locale.
    default = await org.get(path, query=query, scope="read", headers={"Accept-Language": "xx"})
    assert default.status_code == 200 and await default.get_json() != body
    served = served_locales(body)
    assert served and served <= {"fr"}, body
    assert served_locales(await default.get_json()) <= {"en"}


def served_locales(body: dict[str, Any]) -> set[str]:
    """The locales of the content a read served (questions' or categories' ``locale``)."""
    data = body["data"]
    items = data if isinstance(data, list) else [data]
    return {(item.get("question") or item)["locale"] for item in items}


@pytest.mark.parametrize("endpoint", sorted(LOCALIZED_READS))
async def test_openapi_documents_locale_and_accept_language_on_each(
    app: Quart, client: Any, endpoint: str
) -> None:
    spec = await (await client.get("/openapi.json")).get_json()
    (rule,) = [r for r in app.url_map.iter_rules() if r.endpoint == endpoint]
    path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
    parameters = spec["paths"][path]["get"]["parameters"]
    where = {(p["name"].lower(), p["in"]) for p in parameters}
    assert ("locale", "query") in where
    assert ("accept-language", "header") in where
