"""The client configuration and the Python example of docs/agents.md work as written against
a running ``faq serve``: only the URL and the key are filled in."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
from mcp import Client

from tests.api.helpcenter.helpers import enable, question
from tests.api.keys.helpers import make_public_key
from tests.api.mcp.conftest import connect, mcp_url
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"
DOC_URL = "http://127.0.0.1:8000/mcp/demo"
DOC_KEY = "faq_pk_your_publishable_key"


def block(language: str) -> str:
    [text] = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)
    return text


def filled(text: str, url: str, key: str) -> str:
    assert text.count(DOC_URL) == 1 and text.count(DOC_KEY) == 1
    return text.replace(DOC_URL, url).replace(DOC_KEY, key)


async def test_the_documented_client_configuration_connects(
    served: ApiProcess, org: OrgClient
) -> None:
    await enable(org)
    key = (await make_public_key(org))["key"]
    config = json.loads(filled(block("json"), mcp_url(served, org.slug), key))
    [entry] = config["mcpServers"].values()
    assert entry["type"] == "http"
    auth = entry["headers"]["Authorization"].removeprefix("Bearer ")
    async with connect(entry["url"], auth) as client:
        assert isinstance(client, Client)
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"search_faq", "get_question", "list_categories"}


async def test_the_documented_python_example_runs(served: ApiProcess, org: OrgClient) -> None:
    await enable(org)
    made = await question(org, "How do I pay?", "By **card** or bank transfer.")
    key = (await make_public_key(org))["key"]
    script = filled(block("python"), mcp_url(served, org.slug), key)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert lines[0] == "tools: get_question, list_categories, search_faq"
    page = f"{served.base_url}/hc/{org.slug}/en/questions/{made['slug']}"
    assert lines[1].endswith(f" How do I pay? {page}")
    assert "# How do I pay?" in lines
    assert "By **card** or bank transfer." in lines
