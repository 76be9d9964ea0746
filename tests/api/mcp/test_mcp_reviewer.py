"""A reviewer's key through MCP (issue 41): a member's key holding only ``review`` reads as the
API lets it (``review`` includes ``read``): the read tools, the questions proposed for review
(drafts included, as a secret key sees them), and no ``create_draft``."""

from __future__ import annotations

import pytest

from tests.api.helpcenter.helpers import question
from tests.api.mcp.conftest import connect, mcp_url
from tests.api.members.helpers import make_member, member_key
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow


async def test_a_review_only_key_reads_the_proposed_questions(
    served: ApiProcess, org: OrgClient
) -> None:
    proposed = await question(org, "Zorblax gift wrap?", "We wrap for free.", status="draft")
    reviewer = await make_member(org, "editor")
    key = await member_key(org, reviewer, ["review"])
    async with connect(mcp_url(served, org.slug), key) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"search_faq", "get_question", "list_categories"}
        read = await client.call_tool("get_question", {"idOrSlug": proposed["slug"]})
        assert not read.is_error, read.content
        assert read.structured_content["status"] == "draft"
        assert read.structured_content["markdown"].startswith("# Zorblax gift wrap?")
        listed = await client.call_tool("list_categories", {})
        assert not listed.is_error, listed.content
        refused = await client.call_tool("create_draft", {"title": "x", "answer": "y"})
        assert refused.is_error and "write" in refused.content[0].text
