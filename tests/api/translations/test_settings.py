"""GET/PATCH /settings: the org's default locale and enabled locales (issue 15)."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.search import weighted_vector
from api.translations.models import CategoryTranslation, QuestionTranslation, source_digest
from billing.plans import Plan
from tenancy.audit import AuditEntry
from tenancy.clock import utcnow
from tenancy.db import tenant_session
from tests.api.questions.helpers import create as create_question
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient


async def settings(org: OrgClient, scope: str = "read") -> dict[str, Any]:
    r = await org.get("/settings", scope=scope)
    assert r.status_code == 200, await r.get_json()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


def off(org: OrgClient) -> dict[str, Any]:
    """The help center settings of an org that never configured it (issue 16)."""
    return {
        "enabled": False,
        "title": org.info.name,
        "primaryColor": "#1f5fbf",
        "externalImages": False,
        # The help center's chrome (issue 29).
        "headerLinks": [],
        "footerLinks": [],
        "legalText": None,
        "labels": {},
        "logoUrl": None,
        # The "Still need help?" link and the category cards' icons (issue 41).
        "contactUrl": None,
        "categoryIcons": {},
        # Issue 39: who may read the help center, and the org's own sign-in page.
        "access": "public",
        "signInUrl": None,
    }


# The publishing workflow of an org that never changed it (issue 30).
WORKFLOW_OFF = {"requireReview": False}


async def patch(org: OrgClient, body: Any, scope: str = "admin") -> Any:
    return await org.patch("/settings", json=body, scope=scope)


async def refused(org: OrgClient, body: Any, status: int, code: str) -> list[dict[str, str]]:
    r = await patch(org, body)
    payload = await r.get_json()
    assert r.status_code == status, payload
    assert payload["error"]["code"] == code
    details: list[dict[str, str]] = payload["error"]["details"]
    return details


def fields(details: list[dict[str, str]]) -> set[str]:
    return {d["field"] for d in details}


async def test_new_org_serves_en_and_reads_need_read_scope(org: OrgClient) -> None:
    assert await settings(org) == {
        "defaultLocale": "en",
        "locales": ["en"],
        "helpCenter": off(org),
        "workflow": WORKFLOW_OFF,
    }
    assert (await org.get("/settings", scope=None)).status_code == 401


async def test_patch_stores_canonical_case_and_needs_admin(org: OrgClient) -> None:
    r = await patch(org, {"locales": ["en", "pt-br", "ZH-hant-tw"]}, scope="write")
    assert r.status_code == 403
    assert (await r.get_json())["error"]["code"] == "insufficient_scope"

    r = await patch(org, {"locales": ["en", "pt-br", "ZH-hant-tw"]})
    assert r.status_code == 200, await r.get_json()
    want = {
        "defaultLocale": "en",
        "locales": ["en", "pt-BR", "zh-Hant-TW"],
        "helpCenter": off(org),
        "workflow": WORKFLOW_OFF,
    }
    assert (await r.get_json())["data"] == want
    assert await settings(org) == want

    r = await patch(org, {"defaultLocale": "pt-br"})
    assert r.status_code == 200
    assert (await r.get_json())["data"]["defaultLocale"] == "pt-BR"
    # Both at once: the new default among the new list.
    r = await patch(org, {"defaultLocale": "fr", "locales": ["fr", "en", "pt-BR", "zh-Hant-TW"]})
    assert r.status_code == 200, await r.get_json()
    assert await settings(org) == {
        "defaultLocale": "fr",
        "locales": ["fr", "en", "pt-BR", "zh-Hant-TW"],
        "helpCenter": off(org),
        "workflow": WORKFLOW_OFF,
    }


async def test_invalid_settings_name_the_field(org: OrgClient) -> None:
    assert fields(await refused(org, {"locales": []}, 400, "validation_failed")) == {"locales"}
    for tag in ("xx", "en_US", "english", "en-ZZ", "", "en-US-x-private"):
        details = await refused(org, {"locales": ["en", tag]}, 400, "validation_failed")
        assert fields(details) == {"locales"}, tag
        details = await refused(org, {"defaultLocale": tag}, 400, "validation_failed")
        assert fields(details) == {"defaultLocale"}, tag
    # A default that is not enabled, or a list without the current default.
    details = await refused(org, {"defaultLocale": "fr"}, 400, "validation_failed")
    assert fields(details) == {"defaultLocale"}
    details = await refused(org, {"locales": ["fr", "de"]}, 400, "validation_failed")
    assert fields(details) == {"locales"}
    details = await refused(
        org, {"defaultLocale": "de", "locales": ["en", "fr"]}, 400, "validation_failed"
    )
    assert fields(details) == {"defaultLocale"}
    # Two spellings of one tag.
    details = await refused(org, {"locales": ["en", "fr", "FR"]}, 400, "validation_failed")
    assert fields(details) == {"locales"}
    for body in ({"locales": None}, {"defaultLocale": None}, {"locales": "en"}, {"other": 1}):
        await refused(org, body, 400, "validation_failed")
    assert await settings(org) == {
        "defaultLocale": "en",
        "locales": ["en"],
        "helpCenter": off(org),
        "workflow": WORKFLOW_OFF,
    }


async def test_locales_per_plan_default_included(org_factory: OrgFactory) -> None:
    tags = ["en", "fr", "de", "es", "it", "pt", "nl", "sv", "da", "fi", "nb", "pl", "cs"]
    tags += ["hu", "ro", "el", "tr", "ru", "uk", "ja", "ko", "zh"]
    for plan, cap in ((Plan.FREE, 2), (Plan.STARTER, 5), (Plan.PRO, 20)):
        org = await org_factory(plan)
        r = await patch(org, {"locales": tags[:cap]})
        assert r.status_code == 200, (plan, await r.get_json())
        r = await patch(org, {"locales": tags[: cap + 1]})
        assert r.status_code == 402, plan
        assert (await r.get_json())["error"]["code"] == "plan_limit_reached"
        assert (await settings(org))["locales"] == tags[:cap]
    enterprise = await org_factory(Plan.ENTERPRISE)
    r = await patch(enterprise, {"locales": tags})
    assert r.status_code == 200
    assert len((await settings(enterprise))["locales"]) == len(tags)


async def _translate(engine: AsyncEngine, org: OrgClient, locale: str) -> tuple[str, str]:
    """A question and a category with a translation in ``locale``, written straight to the
    org's schema (the translation endpoints have their own tests)."""
    question_id = (await create_question(org, title="T", answer="A"))["id"]
    c = await org.post("/categories", json={"name": "C"}, scope="write")
    category_id = (await c.get_json())["data"]["id"]
    now = utcnow()
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            insert(QuestionTranslation).values(
                question_id=question_id,
                locale=locale,
                title="T",
                answer="A",
                status="draft",
                source_digest=source_digest("T", "A"),
                search_vector=weighted_vector("T", "A"),
                created_at=now,
                updated_at=now,
            )
        )
        await session.execute(
            insert(CategoryTranslation).values(
                category_id=category_id,
                locale=locale,
                name="C",
                description=None,
                source_digest=source_digest("C", None),
                search_vector=weighted_vector("C", None),
                created_at=now,
                updated_at=now,
            )
        )
    return question_id, category_id


async def test_removing_a_locale_with_translations_is_locale_in_use(
    org: OrgClient, engine: AsyncEngine
) -> None:
    assert (await patch(org, {"locales": ["en", "fr", "de"]})).status_code == 200
    question_id, category_id = await _translate(engine, org, "fr")
    details = await refused(org, {"locales": ["en", "de"]}, 409, "locale_in_use")
    assert fields(details) == {"locales"}
    assert "fr" in details[0]["issue"]
    # Removing a locale without translations is fine.
    assert (await patch(org, {"locales": ["en", "fr"]})).status_code == 200
    # The question's translation alone still holds it.
    async with tenant_session(engine, org.info.schema_name) as session, session.begin():
        await session.execute(
            delete(CategoryTranslation).where(CategoryTranslation.category_id == category_id)
        )
    await refused(org, {"locales": ["en"]}, 409, "locale_in_use")
    # A deleted question's translations do not hold it: nobody can reach them to delete them.
    assert (await org.delete(f"/questions/{question_id}", scope="write")).status_code == 204
    assert (await patch(org, {"locales": ["en"]})).status_code == 200


async def test_the_category_translation_alone_holds_the_locale(
    org: OrgClient, engine: AsyncEngine
) -> None:
    assert (await patch(org, {"locales": ["en", "fr"]})).status_code == 200
    question_id, _ = await _translate(engine, org, "fr")
    assert (await org.delete(f"/questions/{question_id}", scope="write")).status_code == 204
    await refused(org, {"locales": ["en"]}, 409, "locale_in_use")


async def test_the_default_applies_on_the_next_request_and_is_audited(
    org: OrgClient, engine: AsyncEngine
) -> None:
    assert (await settings(org))["defaultLocale"] == "en"  # cached in the directory now
    r = await patch(org, {"defaultLocale": "de", "locales": ["de", "en"]})
    assert r.status_code == 200
    assert (await create_question(org, title="Frage", answer="Antwort"))["locale"] == "de"
    c = await org.post("/categories", json={"name": "Kategorie"}, scope="write")
    assert (await c.get_json())["data"]["locale"] == "de"
    # The default category keeps the locale it was created in.
    assert (await (await org.get("/categories/uncategorized")).get_json())["data"]["locale"] == "en"
    # A PATCH that changes nothing writes no audit entry.
    assert (await patch(org, {"locales": ["de", "en"]})).status_code == 200
    async with tenant_session(engine, org.info.schema_name) as session:
        entries = (
            (
                await session.execute(
                    select(AuditEntry).where(AuditEntry.resource_type == "organization")
                )
            )
            .scalars()
            .all()
        )
    assert [(e.action, e.before, e.after) for e in entries] == [
        (
            "settings_changed",
            {"defaultLocale": "en", "locales": ["en"]},
            {"defaultLocale": "de", "locales": ["de", "en"]},
        )
    ]


async def test_other_orgs_are_untouched(org: OrgClient, other_org: OrgClient) -> None:
    assert (await patch(org, {"locales": ["en", "fr"]})).status_code == 200
    assert await settings(other_org) == {
        "defaultLocale": "en",
        "locales": ["en"],
        "helpCenter": off(other_org),
        "workflow": WORKFLOW_OFF,
    }


async def test_a_removal_racing_a_translation_write_never_strands_a_translation(
    org: OrgClient,
) -> None:
    """PATCH locks the org row; a translation write holds it (KEY SHARE) until it commits and
    checks its locale against the row: one of the two wins, and no translation is left in a
    locale that is not enabled."""
    question_id = (await create_question(org))["id"]
    for _ in range(10):
        assert (await patch(org, {"locales": ["en", "fr"]})).status_code == 200
        put, removal = await asyncio.gather(
            org.request(
                "PUT",
                f"/questions/{question_id}/translations/fr",
                json={"title": "T", "answer": "A"},
                scope="write",
            ),
            patch(org, {"locales": ["en"]}),
        )
        enabled = (await settings(org))["locales"]
        listed = await org.get(f"/questions/{question_id}/translations", scope="read")
        translated = [t["locale"] for t in (await listed.get_json())["data"]]
        if removal.status_code == 200:
            assert put.status_code == 400, await put.get_json()
            assert (enabled, translated) == (["en"], [])
        else:
            assert (removal.status_code, put.status_code) == (409, 201)
            assert (enabled, translated) == (["en", "fr"], ["fr"])
            r = await org.delete(f"/questions/{question_id}/translations/fr", scope="write")
            assert r.status_code == 204


# The hosted help center's settings (issue 16).


async def test_help_center_is_off_by_default_and_patched_in_parts(org: OrgClient) -> None:
    r = await patch(org, {"helpCenter": {"enabled": True}}, scope="write")
    assert r.status_code == 403
    r = await patch(org, {"helpCenter": {"enabled": True}})
    assert r.status_code == 200, await r.get_json()
    hc = (await r.get_json())["data"]["helpCenter"]
    # The title defaults to the org's name, the colour to the default one.
    assert hc["enabled"] is True
    assert hc["title"] == org.info.name
    assert hc["primaryColor"].startswith("#") and len(hc["primaryColor"]) == 7
    r = await patch(org, {"helpCenter": {"title": "  Acme   help ", "primaryColor": "#AA3300"}})
    assert r.status_code == 200, await r.get_json()
    want = {
        "enabled": True,
        "title": "Acme help",
        "primaryColor": "#aa3300",
        "externalImages": False,
        "headerLinks": [],
        "footerLinks": [],
        "legalText": None,
        "labels": {},
        "logoUrl": None,
        # The "Still need help?" link and the category cards' icons (issue 41).
        "contactUrl": None,
        "categoryIcons": {},
        # Issue 39: who may read the help center, and the org's own sign-in page.
        "access": "public",
        "signInUrl": None,
    }
    assert (await r.get_json())["data"]["helpCenter"] == want
    got = await settings(org)
    assert got["helpCenter"] == want
    assert got["defaultLocale"] == "en" and got["locales"] == ["en"]
    r = await patch(org, {"helpCenter": {"enabled": False}})
    assert (await r.get_json())["data"]["helpCenter"] == {**want, "enabled": False}
    r = await patch(org, {"helpCenter": {"title": None}})
    assert (await r.get_json())["data"]["helpCenter"]["title"] == org.info.name


async def test_invalid_help_center_settings_name_the_field(org: OrgClient) -> None:
    cases = [
        ({"enabled": "yes"}, "helpCenter.enabled"),
        ({"title": 3}, "helpCenter.title"),
        ({"title": "x" * 121}, "helpCenter.title"),
        ({"primaryColor": "red"}, "helpCenter.primaryColor"),
        ({"primaryColor": "#12345"}, "helpCenter.primaryColor"),
        ({"primaryColor": "#1234567"}, "helpCenter.primaryColor"),
        ({"logo": "x"}, "helpCenter.logo"),
    ]
    for body, field in cases:
        details = await refused(org, {"helpCenter": body}, 400, "validation_failed")
        assert fields(details) == {field}, body
    for body in ([], "on", None):
        details = await refused(org, {"helpCenter": body}, 400, "validation_failed")
        assert fields(details) == {"helpCenter"}, body
    # Nothing was stored by the refused requests.
    assert (await settings(org))["helpCenter"] == off(org)
