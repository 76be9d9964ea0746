"""``/answers`` and ``/questions/{idOrSlug}/similar`` in a locale (issue 40, "Locale dropped"):
negotiated like every read of content (``?locale=``, else ``Accept-Language``), searched in the
locale's text with its language's stemming, served in it, and refused with the lists' 400 when
the org does not serve the locale."""

from __future__ import annotations

from typing import Any

from tests.api.helpcenter.helpers import enable
from tests.api.questions.helpers import create, default_category, error_code, fields
from tests.fixtures.orgs import OrgClient

REFUND_FR = "Comment obtenir un remboursement ?"


async def french_faq(org: OrgClient) -> dict[str, dict[str, Any]]:
    """en (default) and fr: a refund question and a password question translated to French
    (published), a parcel question not translated."""
    r = await org.patch("/settings", json={"locales": ["en", "fr"], "defaultLocale": "en"})
    assert r.status_code == 200, await r.get_json()
    category = await default_category(org)
    made = {
        "refund": await create(
            org,
            category,
            title="How do I get my money back?",
            answer="Refunds are paid within 30 days of a purchase.",
            status="published",
        ),
        "password": await create(
            org,
            category,
            title="How do I reset my password?",
            answer="Use the Forgot password link on the sign-in page.",
            status="published",
        ),
        "parcel": await create(
            org,
            category,
            title="Where is my parcel?",
            answer="Track the parcel from your orders.",
            status="published",
        ),
    }
    for name, title, answer in (
        ("refund", REFUND_FR, "Le remboursement est versé sous 30 jours après l'achat."),
        ("password", "Changer mon mot de passe", "Depuis la page de connexion."),
    ):
        body = {"title": title, "answer": answer, "status": "published"}
        r = await org.request(
            "PUT", f"/questions/{made[name]['id']}/translations/fr", json=body, scope="write"
        )
        assert r.status_code in (200, 201), await r.get_json()
    return made


async def answers(org: OrgClient, **kw: Any) -> tuple[Any, dict[str, Any]]:
    r = await org.get("/answers", scope="read", **kw)
    body = await r.get_json()
    assert r.status_code == 200, body
    return r, body


def titles(body: dict[str, Any]) -> list[str]:
    return [item["question"]["title"] for item in body["data"]]


async def test_locale_fr_searches_and_serves_the_french_translations(org: OrgClient) -> None:
    made = await french_faq(org)
    r, body = await answers(org, query={"q": "remboursement", "locale": "fr"})
    assert titles(body) == [REFUND_FR]
    first = body["data"][0]
    assert first["question"]["id"] == made["refund"]["id"]
    assert first["question"]["locale"] == "fr"
    assert first["snippet"]["title"] == "Comment obtenir un <mark>remboursement</mark> ?"
    assert "<mark>remboursement</mark>" in first["snippet"]["answer"]
    assert r.headers["Content-Language"] == "fr"
    assert "Accept-Language" not in r.headers.get("Vary", "")  # the parameter chose it
    # French stemming (the French text configuration): the plural finds the singular.
    _, body = await answers(org, query={"q": "remboursements versés", "locale": "fr"})
    assert titles(body)[:1] == [REFUND_FR]
    # In the default locale the French text is not searched, and the English is served.
    r, body = await answers(org, query={"q": "remboursement"})
    assert body["data"] == [] and r.headers["Content-Language"] == "en"
    _, body = await answers(org, query={"q": "money back refunds"})
    assert titles(body)[:1] == ["How do I get my money back?"]


async def test_accept_language_chooses_french_and_the_response_varies(org: OrgClient) -> None:
    await french_faq(org)
    r, body = await answers(
        org, query={"q": "remboursement"}, headers={"Accept-Language": "fr-CH, en;q=0.5"}
    )
    assert titles(body) == [REFUND_FR]
    assert r.headers["Content-Language"] == "fr"
    assert "Accept-Language" in r.headers["Vary"]
    # ?locale= wins over the header.
    r, body = await answers(
        org, query={"q": "remboursement", "locale": "en"}, headers={"Accept-Language": "fr"}
    )
    assert body["data"] == [] and "Accept-Language" not in r.headers.get("Vary", "")


async def test_an_untranslated_question_is_found_in_its_own_language_as_the_help_center_does(
    org: OrgClient,
) -> None:
    made = await french_faq(org)
    r, body = await answers(org, query={"q": "parcel", "locale": "fr"})
    assert [item["question"]["id"] for item in body["data"]] == [made["parcel"]["id"]]
    assert body["data"][0]["question"]["locale"] == "en"
    assert body["data"][0]["question"]["title"] == "Where is my parcel?"
    assert "Content-Language" not in r.headers  # served in English, not in French
    # The French help center's search finds the same questions, in the same languages.
    await enable(org)
    for q, shown in (("parcel", "Where is my parcel?"), ("remboursement", REFUND_FR)):
        page = await org.client.get(f"/hc/{org.slug}/fr/search", query_string={"q": q})
        assert page.status_code == 200
        assert shown in (await page.get_data()).decode()


async def test_a_locale_the_org_does_not_serve_is_the_lists_400(org: OrgClient) -> None:
    made = await french_faq(org)
    expected = await org.get("/questions", query={"locale": "xx"}, scope="read")
    assert expected.status_code == 400
    refusal = await expected.get_json()
    assert error_code(refusal) == "validation_failed" and fields(refusal) == {"locale"}
    for path, query in (
        ("/answers", {"q": "remboursement", "locale": "xx"}),
        ("/answers", {"q": "remboursement", "locale": "de"}),  # a real language, not served
        (f"/questions/{made['refund']['id']}/similar", {"locale": "xx"}),
    ):
        r = await org.get(path, query=query, scope="read")
        assert r.status_code == 400, (path, query)
        assert await r.get_json() == refusal, (path, query)


async def test_similar_in_french_serves_french(org: OrgClient) -> None:
    made = await french_faq(org)
    category = await default_category(org)
    other = await create(
        org,
        category,
        title="When is a refund paid?",
        answer="Within 30 days.",
        status="published",
    )
    r = await org.request(
        "PUT",
        f"/questions/{other['id']}/translations/fr",
        json={
            "title": "Quand le remboursement est-il versé ?",
            "answer": "Sous 30 jours.",
            "status": "published",
        },
        scope="write",
    )
    assert r.status_code in (200, 201), await r.get_json()
    path = f"/questions/{made['refund']['id']}/similar"
    r = await org.get(path, query={"locale": "fr"}, scope="read")
    body = await r.get_json()
    assert r.status_code == 200, body
    assert [(i["question"]["title"], i["question"]["locale"]) for i in body["data"]] == [
        ("Quand le remboursement est-il versé ?", "fr")
    ]
    assert r.headers["Content-Language"] == "fr"
    r = await org.get(path, headers={"Accept-Language": "fr"}, scope="read")
    assert (await r.get_json())["data"] == body["data"]
    assert "Accept-Language" in r.headers["Vary"]
