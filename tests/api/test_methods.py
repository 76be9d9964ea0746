"""A wrong method is 405 with an ``Allow`` header naming the route's methods (RFC 9110 section
15.5.6 makes it a MUST), on API, billing and ops routes alike; OPTIONS reports the same set.

On an operation segment (``…/categories/merge``) the methods are the operation's, not those of
the item route (``…/categories/<ref>``) the path also looks like.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pytest
from quart import Quart

from tests.fixtures.orgs import OrgClient

GET = {"GET", "HEAD", "OPTIONS"}
POST = {"POST", "OPTIONS"}
ITEM = {"GET", "HEAD", "OPTIONS", "PATCH", "DELETE"}
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")

# (method, path under the org or absolute, methods the route allows)
SAMPLE = [
    ("PUT", "/categories", GET | POST),
    ("POST", "/categories/cat_01JD0000000000000000000000", ITEM),
    ("GET", "/categories/merge", POST),
    ("HEAD", "/categories/merge", POST),
    ("PUT", "/categories/merge", POST),  # the router's own 405 on an operation segment
    ("DELETE", "/categories/reorder", POST),
    ("PATCH", "/categories/audit", GET),
    ("PUT", "/questions", GET | POST),
    ("GET", "/questions/reorder", POST),
    ("PUT", "/questions/some-slug", ITEM),
    ("DELETE", "/questions/some-slug/revisions", GET),
    ("GET", "/questions/some-slug/revisions/rev_01JD0000000000000000000000/restore", POST),
    ("PUT", "/webhooks", GET | POST),
    ("POST", "/webhooks/wh_01JD0000000000000000000000", ITEM),
    ("GET", "/webhooks/wh_01JD0000000000000000000000/test", POST),
    ("DELETE", "/webhooks/wh_01JD0000000000000000000000/deliveries", GET),
    ("GET", "/webhooks/wh_01JD0000000000000000000000/recover", POST),
    ("PUT", "/keys", GET | POST),
    ("GET", "/keys/0123456789abcdef", {"DELETE", "OPTIONS"}),
    ("POST", "/billing", GET),
    ("GET", "/billing/checkout", POST),
    ("HEAD", "/billing/portal", POST),
    ("GET", "//billing/stripe/webhook", POST),
    ("HEAD", "//billing/stripe/webhook", POST),
    ("POST", "//healthz", GET),
    ("DELETE", "//readyz", GET),
    ("POST", "//metrics", GET),
    ("PUT", "//openapi.json", GET),
    ("POST", "//docs", GET),
    ("POST", "//docs/assets/swagger-ui.css", GET),
]


def allowed(response: Any) -> set[str]:
    header = response.headers.get("Allow")
    assert header is not None, "no Allow header"
    return {m.strip() for m in header.split(",") if m.strip()}


async def call(org: OrgClient, method: str, path: str, scope: str | None = "admin") -> Any:
    if path.startswith("//"):
        kwargs: dict[str, Any] = {"method": method, "headers": org.headers(scope)}
        return await org.client.open(path[1:], **kwargs)
    return await org.request(method, path, scope=scope)


@pytest.mark.parametrize(("method", "path", "methods"), SAMPLE)
async def test_a_405_names_the_allowed_methods(
    org: OrgClient, method: str, path: str, methods: set[str]
) -> None:
    r = await call(org, method, path)
    assert r.status_code == 405, (method, path)
    assert allowed(r) == methods, (method, path)
    if method != "HEAD":
        assert (await r.get_json())["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize(("method", "path", "methods"), SAMPLE)
async def test_options_reports_the_same_methods(
    org: OrgClient, method: str, path: str, methods: set[str]
) -> None:
    r = await call(org, "OPTIONS", path)
    assert r.status_code == 200, path
    assert allowed(r) == methods, path


async def test_an_operation_405_comes_before_the_key_and_names_the_methods(
    org: OrgClient,
) -> None:
    for scope in (None, "read"):
        r = await org.get("/categories/merge", scope=scope)
        assert r.status_code == 405
        assert allowed(r) == POST


def _example_path(rule: str, org_slug: str) -> str:
    path = rule.replace("<org>", org_slug)
    path = re.sub(r"<int:[a-z_]+>", "1", path)  # an int converter routes digits only
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"x-\1", path)


async def test_every_route_answers_a_wrong_method_with_its_methods(
    app: Quart, org: OrgClient
) -> None:
    """Each rule of the app, every method it does not serve: 405 and Allow = the methods of
    the rules spelled like it (the union over GET, POST… declared on the same path)."""
    by_path: dict[str, set[str]] = defaultdict(set)
    for rule in app.url_map.iter_rules():
        by_path[rule.rule] |= set(rule.methods or ())
    checked = 0
    for spelled, methods in by_path.items():
        path = _example_path(spelled, org.slug)
        for method in METHODS:
            if method in methods:
                continue
            kwargs: dict[str, Any] = {"method": method, "headers": org.headers("admin")}
            r = await org.client.open(path, **kwargs)
            assert r.status_code == 405, (method, path, r.status_code)
            assert allowed(r) == methods, (method, path)
            checked += 1
    assert checked > 100
