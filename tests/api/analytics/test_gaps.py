"""``GET /analytics/gaps`` and accepting a suggested synonym (issue 38): from the org's own
searches, clusters of searches that found nothing (content gaps) and the words readers
replaced before opening an answer (suggested synonyms); nothing is applied until an admin
accepts a suggestion, which adds a synonym group through ``PUT /synonyms``'s command
(validated, capped, audited)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.analytics.gaps_helpers import add_reader_searches, an_hour_ago, readers_searches
from tests.api.audit.test_audit_admin import api_key, entries_of, strip_id
from tests.api.keys.helpers import as_key, make_public_key
from tests.api.questions.helpers import create, default_category, error_code
from tests.fixtures.orgs import OrgClient


async def license_question(org: OrgClient) -> dict[str, Any]:
    return await create(
        org,
        await default_category(org),
        title="How do I transfer a license to another person?",
        answer="Billing > Licenses: choose Transfer.",
        status="published",
    )


async def gaps(org: OrgClient, scope: str = "read", **query: Any) -> dict[str, Any]:
    r = await org.get("/analytics/gaps", query=query, scope=scope)
    body = await r.get_json()
    assert r.status_code == 200, body
    data: dict[str, Any] = body["data"]
    return data


async def test_gaps_cluster_unanswered_searches_and_suggest_reformulated_words(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    license = await license_question(org)
    await add_reader_searches(engine, org, an_hour_ago(), *readers_searches(license["id"]))
    await add_reader_searches(engine, other_org, an_hour_ago(), (0, "x", "not mine", 0, None))
    data = await gaps(org)
    assert data["searchesExamined"] == 17
    assert data["contentGaps"] == [
        {
            "locale": "en",
            "query": "gift card",
            "searches": 3,
            "queries": 3,
            "examples": [
                {"query": "gift card", "searches": 1},
                {"query": "gift cards", "searches": 1},
                {"query": "buy a gift card", "searches": 1},
            ],
        },
        {
            "locale": "en",
            "query": "sso",
            "searches": 2,
            "queries": 1,
            "examples": [{"query": "sso", "searches": 2}],
        },
    ]  # "swap seats" and "move seat" found nothing but were reformulated: vocabulary
    (suggestion,) = data["suggestedSynonyms"]  # seen once, too slow, or joined already: none
    assert suggestion["id"].startswith("syn_")
    assert suggestion == {
        "id": suggestion["id"],
        "locale": "en",
        "members": ["swap seats", "transfer license"],
        "searches": 2,
        "examples": [{"query": "swap seats", "reformulatedAs": "transfer license", "searches": 2}],
        "openedQuestionId": license["id"],
    }
    assert (await gaps(org, limit=1))["contentGaps"][0]["query"] == "gift card"
    assert (await gaps(org, locale="fr")) == {
        **data,
        "searchesExamined": 0,
        "contentGaps": [],
        "suggestedSynonyms": [],
    }
    # Nothing is applied without an admin.
    r = await org.get("/synonyms")
    assert (await r.get_json())["data"]["groups"] == []
    r = await org.get("/answers", query={"q": "swap seats"}, scope="read")
    assert (await r.get_json())["data"] == []


async def test_an_admin_accepts_a_suggestion_in_one_call(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    license = await license_question(org)
    await add_reader_searches(engine, org, an_hour_ago(), *readers_searches(license["id"]))
    (suggestion,) = (await gaps(org))["suggestedSynonyms"]
    path = f"/analytics/gaps/suggestions/{suggestion['id']}/accept"
    for scope in ("read", "write"):
        r = await org.post(path, scope=scope)
        assert r.status_code == 403 and error_code(await r.get_json()) == "insufficient_scope"
    r = await other_org.post(path)  # another org has no such suggestion
    assert r.status_code == 404 and error_code(await r.get_json()) == "suggestion_not_found"
    r = await org.client.post(f"/api/v1/{org.slug}{path}", headers=other_org.headers("admin"))
    assert r.status_code == 404 and error_code(await r.get_json()) == "org_not_found"

    r = await org.post(path)
    body = await r.get_json()
    assert r.status_code == 200, body
    assert body["data"]["suggestion"] == suggestion
    assert body["data"]["synonyms"]["groups"] == [["swap seats", "transfer license"]]
    r = await org.get("/synonyms")
    assert (await r.get_json())["data"]["groups"] == [["swap seats", "transfer license"]]
    r = await org.get("/answers", query={"q": "swap seats"}, scope="read")
    assert [i["question"]["id"] for i in (await r.get_json())["data"]][:1] == [license["id"]]
    # Accepted: joined now, so no longer suggested, and accepting again is a 404.
    assert (await gaps(org))["suggestedSynonyms"] == []
    r = await org.post(path)
    assert r.status_code == 404 and error_code(await r.get_json()) == "suggestion_not_found"
    (entry,) = [strip_id(e) for e in await entries_of(engine, org, resource="settings")]
    assert entry == {
        "resource": "settings",
        "resourceId": None,
        "action": "updated",
        "actor": api_key(org.fingerprints["admin"]),
        "before": {"synonyms": {"en": []}},
        "after": {"synonyms": {"en": [["swap seats", "transfer license"]]}},
    }


async def test_gaps_need_a_secret_key_and_a_valid_window(org: OrgClient) -> None:
    public = await make_public_key(org)
    for method, path in (
        ("GET", "/analytics/gaps"),
        ("POST", "/analytics/gaps/suggestions/x/accept"),
    ):
        r = await as_key(org, public["key"], method, path)
        assert r.status_code == 403, path
    r = await org.get("/analytics/gaps", query={"limit": 0}, scope="read")
    assert r.status_code == 400 and error_code(await r.get_json()) == "validation_failed"
    r = await org.get("/analytics/gaps", query={"until": "2999-01-01"}, scope="read")
    assert r.status_code == 400 and error_code(await r.get_json()) == "validation_failed"


async def test_openapi_documents_gaps(client: Any) -> None:
    spec = await (await client.get("/openapi.json")).get_json()
    assert "get" in spec["paths"]["/api/v1/{org}/analytics/gaps"]
    assert "post" in spec["paths"]["/api/v1/{org}/analytics/gaps/suggestions/{suggestion}/accept"]
