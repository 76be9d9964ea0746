"""Issue 39 through the MCP door: a reader token beside a publishable key is verified as on
every door (``api.http.authentication.with_reader``): a bad one is the same 401
``invalid_reader_token``, a good one opens the session."""

from __future__ import annotations

import httpx2
import jwt

from tests.api.audiences.test_reader_tokens import claims, configured
from tests.api.keys.helpers import make_public_key
from tests.api.mcp.conftest import ACCEPT, INITIALIZE, connect, mcp_url
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient


async def test_a_reader_token_is_checked_at_the_mcp_door(
    served: ApiProcess, org: OrgClient
) -> None:
    secret = await configured(org)
    website = (await make_public_key(org))["key"]
    url = mcp_url(served, org.slug)
    good = jwt.encode(claims(org), secret, algorithm="HS256", headers={"kid": "app"})
    expired = jwt.encode(
        claims(org, iat=1_700_000_000, exp=1_700_000_600),
        secret,
        algorithm="HS256",
        headers={"kid": "app"},
    )
    auth = {**ACCEPT, "Authorization": f"Bearer {website}"}
    async with httpx2.AsyncClient(timeout=30) as http:
        r = await http.post(url, json=INITIALIZE, headers={**auth, "X-Reader-Token": expired})
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "invalid_reader_token"
        assert "expired" in r.json()["error"]["message"]
        r = await http.post(url, json=INITIALIZE, headers={**auth, "X-Reader-Token": good})
        assert r.status_code == 200, r.text
    async with connect(url, website, **{"X-Reader-Token": good}) as client:
        listed = await client.list_tools()
        assert any(tool.name == "search_faq" for tool in listed.tools)
