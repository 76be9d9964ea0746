"""Issue 39 through the MCP door (a real ``faq serve``, the SDK's client): ``search_faq``,
``get_question``, ``list_categories`` and the resources show a publishable key's caller only
what its reader's audiences allow; a restricted question is "no question" like one that does
not exist."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.audiences.test_leak_surfaces import SEES, TITLES, WORD, build
from tests.api.mcp.conftest import connect, mcp_url, served  # noqa: F401 (the fixture)
from tests.conftest import OrgFactory
from tests.fixtures.bounded import ApiProcess

pytestmark = pytest.mark.slow


async def test_mcp_shows_each_reader_only_what_its_audiences_allow(
    served: ApiProcess,  # noqa: F811
    org_factory: OrgFactory,
    engine: AsyncEngine,
) -> None:
    site = await build(org_factory, engine)
    url = mcp_url(served, site.org.slug)
    restricted = site.restricted_category
    for reader, allowed in SEES.items():
        token = site.token(reader)
        extra = {"X-Reader-Token": token} if token else {}
        async with connect(url, site.key, **extra) as client:
            found = await client.call_tool("search_faq", {"query": WORD, "limit": 20})
            assert not found.is_error, found.content
            titles = {r["title"] for r in found.structured_content["results"]}
            assert titles == {TITLES[n] for n in allowed}, reader
            for name, q in site.questions().items():
                got = await client.call_tool("get_question", {"idOrSlug": q["slug"]})
                assert got.is_error == (name not in allowed), (reader, name)
                if got.is_error:
                    assert q["title"] not in got.content[0].text
            listed = await client.call_tool("list_categories", {})
            slugs = {c["slug"] for c in listed.structured_content["categories"]}
            assert (restricted["slug"] in slugs) == ("nested" in allowed), reader
            scoped = await client.call_tool(
                "search_faq", {"query": WORD, "category": restricted["slug"]}
            )
            assert scoped.is_error == ("b" not in reader.split(",")), reader
            resources = (await client.list_resources()).resources
            named = {r.title for r in resources}
            assert named == {TITLES[n] for n in allowed}, reader
            for name, q in site.questions().items():
                uri = f"faq://{site.org.slug}/questions/{q['slug']}"
                if name in allowed:
                    read = await client.read_resource(uri)
                    assert q["title"] in read.contents[0].text
                else:
                    with pytest.raises(MCPError):
                        await client.read_resource(uri)
