"""Conditional requests over real HTTP (``faq serve``, Hypercorn): a 304 goes out without a body
or its headers, a 412 with the current resource (issue 30)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.bounded import fetch as fetch_as_sent
from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow


def fetch(url: str, **kw: Any) -> tuple[int, dict[str, str], bytes]:
    """``bounded.fetch`` with the header names lower-cased (Hypercorn sends them so)."""
    status, headers, body = fetch_as_sent(url, **kw)
    return status, {name.lower(): value for name, value in headers.items()}, body


def test_304_and_412_over_the_wire(live_server: LiveServer) -> None:  # noqa: F811
    base = f"{live_server.base_url}/api/v1/{live_server.org_slug}"
    auth = {"Authorization": f"Bearer {live_server.admin_key}"}
    status, headers, body = fetch(
        f"{base}/categories",
        method="POST",
        headers={**auth, "Content-Type": "application/json"},
        body=json.dumps({"name": "Wire tags"}).encode(),
    )
    assert status == 201, body
    category = json.loads(body)["data"]
    url = f"{base}/categories/{category['id']}"
    status, headers, body = fetch(url, headers=auth)
    assert status == 200
    tag = headers["etag"]
    status, headers, body = fetch(url, headers={**auth, "If-None-Match": tag})
    assert status == 304 and body == b""
    assert headers["etag"] == tag
    assert "content-type" not in headers
    status, headers, body = fetch(
        url,
        method="PATCH",
        headers={**auth, "Content-Type": "application/json", "If-Match": '"stale"'},
        body=json.dumps({"name": "Wire tags 2"}).encode(),
    )
    assert status == 412
    assert headers["etag"] == tag
    answer = json.loads(body)
    assert answer["error"]["code"] == "precondition_failed"
    assert answer["data"]["name"] == "Wire tags"
    # A list answered 304 before it is read.
    status, headers, _ = fetch(f"{base}/categories", headers=auth)
    assert status == 200 and headers["etag"].startswith('W/"g')
    status, headers, body = fetch(
        f"{base}/categories", headers={**auth, "If-None-Match": headers["etag"]}
    )
    assert status == 304 and body == b"" and "content-type" not in headers
