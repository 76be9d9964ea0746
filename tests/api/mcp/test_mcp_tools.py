"""The MCP server of an org, from outside: the SDK's client against a running ``faq serve``
initializes, lists the tools and calls each one; a publishable key sees published content
only; another org's key is refused; bad input is an error result naming the problem."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from billing.plans import Plan
from tests.api.audiences.test_audiences import make
from tests.api.helpcenter.helpers import category, enable, question
from tests.api.keys.helpers import make_public_key
from tests.api.mcp.conftest import ACCEPT, INITIALIZE, connect, mcp_url
from tests.conftest import OrgFactory
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow


async def faq(org: OrgClient) -> dict[str, Any]:
    """A help center with a published and a draft question about parcels."""
    await enable(org, title="Parcel Co help")
    shipping = await category(org, "Shipping")
    published = await question(
        org,
        "Where is my zorblax parcel?",
        "Track it from **Orders**, then *Track*.",
        categoryId=shipping["id"],
    )
    draft = await question(org, "Zorblax parcel insurance?", "Not decided yet.", status="draft")
    return {"shipping": shipping, "published": published, "draft": draft}


async def test_initialize_lists_the_tools_and_each_tool_answers(
    served: ApiProcess, org: OrgClient
) -> None:
    made = await faq(org)
    url = mcp_url(served, org.slug)
    async with connect(url, org.keys["write"]) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None and client.server_info.name == "faq"
        assert client.instructions and "search_faq" in client.instructions
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"search_faq", "get_question", "list_categories", "create_draft"}
        search = tools["search_faq"]
        assert search.input_schema["required"] == ["query"]
        assert {"query", "locale", "limit", "category"} <= set(search.input_schema["properties"])
        assert search.description and "confident" in search.description

        found = await client.call_tool("search_faq", {"query": "zorblax parcel"})
        assert not found.is_error, found.content
        results = found.structured_content["results"]
        slug = made["published"]["slug"]
        hit = next(r for r in results if r["slug"] == slug)
        assert hit["url"] == f"{served.base_url}/hc/{org.slug}/en/questions/{slug}"
        assert {"score", "confident", "snippet", "title", "id"} <= set(hit)
        # Like /answers: published questions only, whatever the key.
        assert made["draft"]["slug"] not in [r["slug"] for r in results]
        assert results[0]["confident"] is True
        assert "<mark>" in results[0]["snippet"]["title"]

        got = await client.call_tool("get_question", {"idOrSlug": slug})
        assert not got.is_error, got.content
        markdown = got.structured_content["markdown"]
        assert markdown.startswith("# Where is my zorblax parcel?\n")
        assert "Track it from **Orders**, then *Track*." in markdown
        assert got.structured_content["url"] in markdown
        assert got.content[0].text == markdown

        listed = await client.call_tool("list_categories", {})
        names = [c["slug"] for c in listed.structured_content["categories"]]
        assert made["shipping"]["slug"] in names

        created = await client.call_tool(
            "create_draft",
            {
                "title": "Can I change the zorblax address?",
                "answer": "Ask support.",
                "category": "shipping",
            },
        )
        assert not created.is_error, created.content
        new = created.structured_content["question"]
        assert new["status"] == "draft" and new["categoryId"] == made["shipping"]["id"]
    r = await org.get(f"/questions/{new['id']}", scope="read")
    assert (await r.get_json())["data"]["status"] == "draft"


async def test_a_publishable_key_sees_published_content_only(
    served: ApiProcess, org: OrgClient
) -> None:
    made = await faq(org)
    key = (await make_public_key(org))["key"]
    async with connect(mcp_url(served, org.slug), key) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"search_faq", "get_question", "list_categories"}
        found = await client.call_tool("search_faq", {"query": "zorblax"})
        assert [r["slug"] for r in found.structured_content["results"]] == [
            made["published"]["slug"]
        ]
        hidden = await client.call_tool("get_question", {"idOrSlug": made["draft"]["slug"]})
        assert hidden.is_error
        assert "idOrSlug" in hidden.content[0].text
        refused = await client.call_tool("create_draft", {"title": "x", "answer": "y"})
        assert refused.is_error and "write" in refused.content[0].text
        # The resources: each published question, as Markdown; the draft is not one.
        listed = (await client.list_resources()).resources
        uri = f"faq://{org.slug}/questions/{made['published']['slug']}"
        assert [r.uri for r in listed] == [uri]
        read = await client.read_resource(uri)
        assert read.contents[0].text.startswith("# Where is my zorblax parcel?")
        assert read.contents[0].mime_type == "text/markdown"
        with pytest.raises(MCPError):
            await client.read_resource(f"faq://{org.slug}/questions/{made['draft']['slug']}")


async def test_another_orgs_key_and_bad_keys_are_refused(
    served: ApiProcess, org: OrgClient, other_org: OrgClient
) -> None:
    await faq(org)
    url = mcp_url(served, org.slug)
    body, accept = INITIALIZE, ACCEPT
    async with httpx2.AsyncClient(timeout=30) as http:
        other = await http.post(
            url, json=body, headers={**accept, "Authorization": f"Bearer {other_org.keys['admin']}"}
        )
        assert other.status_code == 404
        assert other.json()["error"]["code"] == "org_not_found"
        missing = await http.post(url, json=body, headers=accept)
        assert missing.status_code == 401
        assert missing.headers["WWW-Authenticate"] == "Bearer"
        assert missing.json()["error"]["code"] == "unauthorized"
        wrong = await http.post(
            url, json=body, headers={**accept, "Authorization": "Bearer faq_nope"}
        )
        assert wrong.status_code == 401
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client fails to initialize
        async with connect(url, other_org.keys["admin"]):
            pass


async def test_bad_input_is_an_error_result_naming_the_problem(
    served: ApiProcess, org: OrgClient
) -> None:
    await faq(org)
    async with connect(mcp_url(served, org.slug), org.keys["read"]) as client:
        empty = await client.call_tool("search_faq", {"query": ""})
        assert empty.is_error and "query" in empty.content[0].text
        big = await client.call_tool("search_faq", {"query": "parcel", "limit": 500})
        assert big.is_error and "limit" in big.content[0].text
        locale = await client.call_tool("search_faq", {"query": "parcel", "locale": "xx-YY"})
        assert locale.is_error and "locale" in locale.content[0].text
        unknown = await client.call_tool("search_faq", {"query": "parcel", "colour": "red"})
        assert unknown.is_error and "colour" in unknown.content[0].text
        category_ = await client.call_tool("search_faq", {"query": "parcel", "category": "nope"})
        assert category_.is_error and "category" in category_.content[0].text
        missing = await client.call_tool("get_question", {})
        assert missing.is_error and "idOrSlug" in missing.content[0].text
        no_tool = await client.call_tool("delete_everything", {})
        assert no_tool.is_error and "delete_everything" in no_tool.content[0].text
        # A read key cannot propose drafts.
        draft = await client.call_tool("create_draft", {"title": "x", "answer": "y"})
        assert draft.is_error and "write" in draft.content[0].text
        for result in (empty, big, locale, unknown, missing, no_tool):
            assert "Traceback" not in result.content[0].text


async def test_create_draft_of_an_existing_question_leaves_the_published_answer(
    served: ApiProcess, org: OrgClient
) -> None:
    made = await faq(org)
    slug = made["published"]["slug"]
    async with connect(mcp_url(served, org.slug), org.keys["write"]) as client:
        proposed = {"idOrSlug": slug, "answer": "Track it from **Orders** or by email."}
        saved = await client.call_tool("create_draft", proposed)
        assert not saved.is_error, saved.content
        again = await client.call_tool("create_draft", {**proposed, "answer": "Something else."})
        assert again.is_error and "idOrSlug" in again.content[0].text
        assert "already has a draft" in again.content[0].text
        unknown = await client.call_tool("create_draft", {"idOrSlug": "nope", "answer": "x"})
        assert unknown.is_error and "idOrSlug" in unknown.content[0].text
        untitled = await client.call_tool("create_draft", {"answer": "x"})
        assert untitled.is_error and "title" in untitled.content[0].text
    draft = await org.get(f"/questions/{slug}/draft", scope="read")
    assert draft.status_code == 200
    assert (await draft.get_json())["data"]["answer"] == "Track it from **Orders** or by email."
    live = await org.get(f"/questions/{slug}", scope="read")
    live_body = (await live.get_json())["data"]
    assert live_body["answer"] == "Track it from **Orders**, then *Track*."
    assert live_body["status"] == "published"


async def test_the_locale_argument_is_negotiated_and_refused_as_the_api_does(
    served: ApiProcess, org: OrgClient
) -> None:
    """Issue 40: search_faq, get_question and list_categories serve the locale the API's
    ``locale`` parameter would, and refuse one the org does not serve with the API's refusal
    (``validation_failed`` on ``locale``), as an error result: never silently the default."""
    made = await faq(org)
    r = await org.patch("/settings", json={"locales": ["en", "fr"], "defaultLocale": "en"})
    assert r.status_code == 200, await r.get_json()
    slug = made["published"]["slug"]
    body = {"title": "Où est mon colis zorblax ?", "answer": "Suivez-le.", "status": "published"}
    r = await org.request(
        "PUT", f"/questions/{made['published']['id']}/translations/fr", json=body, scope="write"
    )
    assert r.status_code in (200, 201), await r.get_json()
    rest = await org.get("/answers", query={"q": "colis", "locale": "xx"}, scope="read")
    refusal = (await rest.get_json())["error"]
    assert rest.status_code == 400 and refusal["details"] == [
        {"field": "locale", "issue": "not an enabled locale"}
    ]
    async with connect(mcp_url(served, org.slug), org.keys["read"]) as client:
        found = await client.call_tool("search_faq", {"query": "colis", "locale": "FR"})
        assert not found.is_error, found.content
        assert found.structured_content["locale"] == "fr"
        assert [r["title"] for r in found.structured_content["results"]] == [body["title"]]
        assert found.structured_content["results"][0]["url"].endswith(f"/fr/questions/{slug}")
        for tool, arguments in (
            ("search_faq", {"query": "colis"}),
            ("get_question", {"idOrSlug": slug}),
            ("list_categories", {}),
        ):
            for locale in ("xx", "de", "fr_FR"):
                refused = await client.call_tool(tool, {**arguments, "locale": locale})
                assert refused.is_error, (tool, locale)
                text = refused.content[0].text
                assert text.startswith(
                    f"{refusal['code']}: {refusal['message']} (locale: not an enabled locale)"
                )
                assert "en, fr" in text


async def test_create_draft_carries_audiences_checked_as_the_api_checks_them(
    served: ApiProcess, org_factory: OrgFactory
) -> None:
    """Issue 39: an assistant's draft may be for some readers only; an unknown audience is
    refused naming it, as the API refuses it."""
    org = await org_factory(Plan.PRO)
    await make(org, name="Partners")
    made = await faq(org)
    slug = made["published"]["slug"]
    async with connect(mcp_url(served, org.slug), org.keys["write"]) as client:
        new = {"title": "Partner rebates?", "answer": "See the portal.", "audiences": ["partners"]}
        created = await client.call_tool("create_draft", new)
        assert not created.is_error, created.content
        assert created.structured_content["question"]["audiences"] == ["partners"]
        wrong = await client.call_tool("create_draft", {**new, "audiences": ["nobody"]})
        assert wrong.is_error and "audiences[0]" in wrong.content[0].text
        revised = {"idOrSlug": slug, "answer": "Partners only now.", "audiences": ["partners"]}
        saved = await client.call_tool("create_draft", revised)
        assert not saved.is_error, saved.content
    draft = await org.get(f"/questions/{slug}/draft", scope="read")
    body = (await draft.get_json())["data"]
    assert body["audiences"] == ["partners"] and "audiences" in body["changedFields"]
    live = await org.get(f"/questions/{slug}", scope="read")
    assert (await live.get_json())["data"]["audiences"] == []  # until the draft is published
