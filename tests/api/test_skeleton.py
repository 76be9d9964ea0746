"""Health, metrics, OpenAPI and docs, request ids, and the error shape of every failure."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import api.app
from tests.fixtures.orgs import OrgClient


async def test_healthz_and_readyz(client: Any) -> None:
    assert (await client.get("/healthz")).status_code == 200
    r = await client.get("/readyz")
    assert r.status_code == 200
    assert (await r.get_json()) == {"status": "ready"}


async def test_every_response_has_a_request_id(client: Any, org: OrgClient) -> None:
    r = await client.get("/healthz", headers={"X-Request-Id": "trace-123"})
    assert r.headers["X-Request-Id"] == "trace-123"
    r = await client.get("/api/v1/x/categories")
    assert r.status_code == 401 and len(r.headers["X-Request-Id"]) == 32
    r = await org.get("/categories")
    assert r.headers["X-Request-Id"]


async def test_metrics_count_requests_by_route_and_status(client: Any, org: OrgClient) -> None:
    await org.get("/categories")
    body = (await (await client.get("/metrics")).get_data()).decode()
    assert (
        'faq_http_requests_total{method="GET",route="/api/v1/<org>/categories",status="200"}'
        in body
    )
    assert "faq_http_request_duration_seconds_bucket" in body


async def test_openapi_documents_every_api_route(client: Any, app: Any) -> None:
    r = await client.get("/openapi.json")
    assert r.status_code == 200
    spec = await r.get_json()
    assert spec["openapi"].startswith("3.1")
    paths = spec["paths"]
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith(("/api/v1", "/billing")):
            documented = rule.rule.replace("<", "{").replace(">", "}")
            documented = documented.replace("{path:", "{")
            assert documented in paths, documented
    create = paths["/api/v1/{org}/categories"]["post"]
    assert create["summary"]
    assert "201" in create["responses"]


async def test_docs_page_and_its_assets_are_served_locally(client: Any) -> None:
    r = await client.get("/docs")
    assert r.status_code == 200
    page = (await r.get_data()).decode()
    assert "/docs/assets/swagger-ui-bundle.js" in page
    assert "cdn" not in page.lower()
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        r = await client.get(f"/docs/assets/{asset}")
        assert r.status_code == 200, asset
        assert len(await r.get_data()) > 1000


async def test_unknown_route_and_wrong_method(client: Any, org: OrgClient) -> None:
    r = await client.get("/nope")
    assert r.status_code == 404
    assert await r.get_json() == {
        "error": {"code": "route_not_found", "message": "No such route.", "details": []}
    }
    r = await org.request("PUT", "/categories")
    assert r.status_code == 405
    assert (await r.get_json())["error"]["code"] == "method_not_allowed"


async def test_body_over_the_limit_is_413(org: OrgClient, app: Any) -> None:
    limit = app.config["MAX_CONTENT_LENGTH"]
    r = await org.post(
        "/categories",
        data=b'{"name": "' + b"x" * limit + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 413
    assert (await r.get_json())["error"]["code"] == "payload_too_large"


async def test_deeply_nested_json_is_refused_cleanly(org: OrgClient) -> None:
    body = b'{"name": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    r = await org.post("/categories", data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert (await r.get_json())["error"]["code"] == "invalid_json"


async def test_depth_limit_at_the_edge_and_inside_strings(org: OrgClient) -> None:
    """32 levels pass, 33 do not; brackets in strings (after escaped quotes and backslashes)
    do not count, nor do many shallow containers."""
    for depth, code in ((31, "validation_failed"), (32, "invalid_json")):  # plus the outer {}
        body = b'{"name": ' + b"[" * depth + b"]" * depth + b"}"
        r = await org.post("/categories", data=body, headers={"Content-Type": "application/json"})
        assert (await r.get_json())["error"]["code"] == code, depth
    tricky = {
        "name": "Brackets " + "\\" + "[{" * 50,
        "description": '\\"' + "[" * 40 + '"\\',
        "x": [[] for _ in range(100)],
    }
    r = await org.post("/categories", json=tricky)
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_failed", error  # read past the depth check
    assert error["details"] == [{"field": "x", "issue": "unknown or read-only field"}]


async def _lines_of_app_code(org: OrgClient, body: bytes) -> int:
    """How many lines of api/app.py run while the request is served (sys.settrace)."""
    lines = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += event == "line"
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == api.app.__file__ else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        r = await org.post("/categories", data=body, headers={"Content-Type": "application/json"})
    finally:
        sys.settrace(previous)
    assert r.status_code == 400, await r.get_data()
    return lines


async def test_the_depth_check_costs_no_python_per_byte(org: OrgClient) -> None:
    """The depth limit is enforced without a Python loop over the body: a body of 600 KB, full
    of brackets (in strings and as shallow containers), runs about as many lines of the app's
    code as a body of 50 bytes."""
    small = b'{"name": "", "items": [[1], {"a": [2]}]}'
    item = b'{"k": [1, 2, {"v": "[[[{{{"}], "s": "' + b"x" * 200 + b'"}'
    big = b'{"name": "", "items": [' + b",".join([item] * 2500) + b"]}"
    assert len(big) > 600_000
    baseline = await _lines_of_app_code(org, small)
    assert await _lines_of_app_code(org, big) < baseline + 100


async def test_form_encoded_json_is_still_read(org: OrgClient) -> None:
    r = await org.post(
        "/categories",
        data=b'{"name": "From curl"}',
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 201


async def test_unexpected_errors_are_500_without_internals(app: Any, client: Any) -> None:
    @app.get("/_boom")
    async def boom() -> None:
        raise RuntimeError("SELECT secret FROM somewhere")

    r = await client.get("/_boom")
    assert r.status_code == 500
    body = await r.get_json()
    assert body["error"]["code"] == "internal_error"
    assert "SELECT" not in str(body) and "Traceback" not in str(body)


async def test_a_204_carries_no_content_headers(app: Any) -> None:
    """RFC 9110: no Content-Length on a 204 (the test client re-adds both when it rebuilds the
    response, so the hook is checked directly)."""
    from quart import Response

    from api.app import bare_no_content

    async with app.app_context():
        response = await bare_no_content(Response("", status=204))
    assert "Content-Type" not in response.headers
    assert "Content-Length" not in response.headers
