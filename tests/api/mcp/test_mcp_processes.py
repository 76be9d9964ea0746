"""The MCP endpoint keeps no session in a process (stateless Streamable HTTP): a client whose
messages a load balancer spreads over two API processes initializes on one and calls tools on
the other. Also: the HTTP rules of the endpoint (methods, CORS as for publishable keys, the
Origin check, the plan's rate limit per key)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import httpx2
import pytest

from tests.api.helpcenter.helpers import enable, question
from tests.api.keys.helpers import OTHER_SITE, SITE, make_public_key
from tests.api.mcp.conftest import ACCEPT, INITIALIZE, connect, mcp_url
from tests.fixtures.bounded import ApiProcess, api_process
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow


class RoundRobin(httpx2.AsyncBaseTransport):
    """A load balancer: each request goes to the next process's port, in turn."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = itertools.cycle(ports)
        self.seen: list[int] = []
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = next(self.ports)
        self.seen.append(port)
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture(scope="module")
def second() -> Iterator[ApiProcess]:
    with api_process() as api:
        yield api


def port_of(api: ApiProcess) -> int:
    return int(api.base_url.rsplit(":", 1)[1])


async def test_a_client_spread_over_two_processes_works(
    served: ApiProcess, second: ApiProcess, org: OrgClient
) -> None:
    await enable(org)
    made = await question(org, "How do I reset my blorptastic password?", "Use the link.")
    balancer = RoundRobin([port_of(served), port_of(second)])
    async with connect(mcp_url(served, org.slug), org.keys["read"], transport=balancer) as client:
        for _ in range(2):
            found = await client.call_tool("search_faq", {"query": "blorptastic"})
            assert [r["slug"] for r in found.structured_content["results"]] == [made["slug"]]
        got = await client.call_tool("get_question", {"idOrSlug": made["slug"]})
        assert not got.is_error
    assert set(balancer.seen) == {port_of(served), port_of(second)}
    assert len(balancer.seen) >= 4


async def test_get_and_delete_are_405_there_is_no_session(
    served: ApiProcess, org: OrgClient
) -> None:
    url = mcp_url(served, org.slug)
    auth = {"Authorization": f"Bearer {org.keys['read']}"}
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **auth})
        assert first.status_code == 200
        assert first.headers["Content-Type"].startswith("application/json")
        assert "Mcp-Session-Id" not in first.headers
        # Like every response of the API: a request id and the key's rate limit.
        assert first.headers["X-Request-Id"] and first.headers["RateLimit-Limit"]
        for method in ("GET", "DELETE"):
            r = await http.request(method, url, headers={"Accept": "text/event-stream", **auth})
            assert r.status_code == 405, method
            assert "POST" in r.headers["Allow"]


async def test_cors_as_for_publishable_keys(served: ApiProcess, org: OrgClient) -> None:
    url = mcp_url(served, org.slug)
    public = (await make_public_key(org, [SITE]))["key"]
    preflight = {
        "Origin": SITE,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        r = await http.options(url, headers=preflight)
        assert r.status_code == 204
        assert r.headers["Access-Control-Allow-Origin"] == SITE
        assert "POST" in r.headers["Access-Control-Allow-Methods"]
        assert "mcp-protocol-version" in r.headers["Access-Control-Allow-Headers"].lower()
        r = await http.options(url, headers={**preflight, "Origin": OTHER_SITE})
        assert r.status_code == 204 and "Access-Control-Allow-Origin" not in r.headers

        as_site = {**ACCEPT, "Authorization": f"Bearer {public}", "Origin": SITE}
        r = await http.post(url, json=INITIALIZE, headers=as_site)
        assert r.status_code == 200
        assert r.headers["Access-Control-Allow-Origin"] == SITE
        assert "Origin" in r.headers["Vary"]
        # An Origin the key does not list, or any Origin with a secret key: 403 (the MCP
        # specification's Origin check).
        r = await http.post(url, json=INITIALIZE, headers={**as_site, "Origin": OTHER_SITE})
        assert r.status_code == 403 and r.json()["error"]["code"] == "origin_not_allowed"
        secret = {**ACCEPT, "Authorization": f"Bearer {org.keys['read']}", "Origin": SITE}
        r = await http.post(url, json=INITIALIZE, headers=secret)
        assert r.status_code == 403 and "Access-Control-Allow-Origin" not in r.headers
        # Without Origin (an assistant's server, not a browser): answered, no CORS header.
        r = await http.post(
            url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {public}"}
        )
        assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers


async def test_the_plans_rate_limit_applies_per_key(org: OrgClient) -> None:
    limited = {"FAQ_RATE_LIMITS": "STARTER=3"}
    with api_process(limited) as api:
        url = mcp_url(api, org.slug)
        async with httpx2.AsyncClient(timeout=30) as http:
            answers = []
            for _ in range(4):
                r = await http.post(
                    url,
                    json=INITIALIZE,
                    headers={**ACCEPT, "Authorization": f"Bearer {org.keys['read']}"},
                )
                answers.append(r.status_code)
            assert answers == [200, 200, 200, 429]
            assert r.json()["error"]["code"] == "rate_limited" and "Retry-After" in r.headers
            # Another key of the org has its own budget.
            other = await http.post(
                url,
                json=INITIALIZE,
                headers={**ACCEPT, "Authorization": f"Bearer {org.keys['write']}"},
            )
            assert other.status_code == 200
