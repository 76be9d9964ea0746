"""CORS for publishable keys only: listed origins get Access-Control-Allow-Origin (errors
too), preflights without a key are answered from the org's active public keys, secret keys
never get CORS headers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.keys.helpers import OTHER_SITE, SITE, as_key, make_key, make_public_key
from tests.fixtures.orgs import OrgClient

PREFLIGHT = {
    "Access-Control-Request-Method": "GET",
    "Access-Control-Request-Headers": "authorization, accept-language",
}


def no_cors(response: Any) -> bool:
    return not any(
        name.lower().startswith("access-control-") for name, _ in response.headers.items()
    )


def vary(response: Any) -> set[str]:
    return {v.strip().lower() for v in response.headers.get("Vary", "").split(",") if v.strip()}


async def test_a_listed_origin_gets_cors_headers(org: OrgClient) -> None:
    key = (await make_public_key(org, [SITE, "http://localhost:8080"]))["key"]
    for origin in (SITE, "http://localhost:8080"):
        r = await as_key(org, key, "GET", "/categories", headers={"Origin": origin})
        assert r.status_code == 200
        assert r.headers["Access-Control-Allow-Origin"] == origin
        assert "origin" in vary(r)
        assert "Access-Control-Allow-Credentials" not in r.headers


async def test_an_unlisted_origin_gets_none_but_an_answer(org: OrgClient) -> None:
    key = (await make_public_key(org))["key"]
    r = await as_key(org, key, "GET", "/categories", headers={"Origin": OTHER_SITE})
    assert r.status_code == 200
    assert no_cors(r)
    r = await as_key(org, key, "GET", "/categories")
    assert r.status_code == 200 and no_cors(r)


async def test_secret_keys_never_get_cors_headers(org: OrgClient) -> None:
    await make_public_key(org)
    for scope in ("read", "write", "admin"):
        r = await org.get("/categories", scope=scope, headers={"Origin": SITE})
        assert r.status_code == 200
        assert no_cors(r), scope
        r = await org.get("/keys", scope=scope, headers={"Origin": SITE})
        assert no_cors(r), scope


async def test_errors_to_a_listed_origin_carry_cors_headers(org: OrgClient) -> None:
    key = (await make_public_key(org))["key"]
    origin = {"Origin": SITE}
    r = await as_key(org, key, "GET", "/questions/no-such-question", headers=origin)
    assert r.status_code == 404
    assert r.headers["Access-Control-Allow-Origin"] == SITE
    r = await as_key(org, key, "POST", "/categories", headers=origin, json={"name": "x"})
    assert r.status_code == 403
    assert r.headers["Access-Control-Allow-Origin"] == SITE
    # No key, or a wrong one: the org's public keys decide.
    for token in (None, "faq_pk_wrong"):
        r = await as_key(org, token, "GET", "/categories", headers=origin)
        assert r.status_code == 401
        assert r.headers["Access-Control-Allow-Origin"] == SITE
        r = await as_key(org, token, "GET", "/categories", headers={"Origin": OTHER_SITE})
        assert r.status_code == 401 and no_cors(r)


async def test_preflight_of_a_readable_path(org: OrgClient) -> None:
    await make_public_key(org)
    for path in ("/categories", "/categories/shipping", "/questions", "/questions/a-slug"):
        r = await as_key(org, None, "OPTIONS", path, headers={"Origin": SITE, **PREFLIGHT})
        assert r.status_code == 204, path
        assert r.headers["Access-Control-Allow-Origin"] == SITE
        assert r.headers["Access-Control-Allow-Methods"] == "GET"
        assert r.headers["Access-Control-Allow-Headers"] == (
            "Authorization, Accept-Language, X-Reader-Token"
        )
        assert int(r.headers["Access-Control-Max-Age"]) > 0
        assert "origin" in vary(r)
        assert await r.get_data() == b""


async def test_preflight_otherwise_has_no_cors_headers(
    org: OrgClient, other_org: OrgClient
) -> None:
    await make_public_key(org)
    cases = [
        (org.slug, "/questions", OTHER_SITE),  # origin not listed
        (org.slug, "/webhooks", SITE),  # a path a public key may not read
        (org.slug, "/keys", SITE),
        (org.slug, "/questions/x/revisions", SITE),
        (other_org.slug, "/questions", SITE),  # another org lists no such origin
        ("no-such-org", "/questions", SITE),
    ]
    for slug, path, origin in cases:
        headers = {"Origin": origin, **PREFLIGHT}
        r = await as_key(org, None, "OPTIONS", f"/api/v1/{slug}{path}", headers=headers)
        assert r.status_code == 204, (slug, path, r.status_code)
        assert no_cors(r), (slug, path)


async def test_preflight_follows_revocation_and_expiry(org: OrgClient) -> None:
    created = await make_public_key(org)
    assert (await org.delete(f"/keys/{created['fingerprint']}")).status_code == 204
    await asyncio.sleep(0.2)
    r = await as_key(org, None, "OPTIONS", "/questions", headers={"Origin": SITE, **PREFLIGHT})
    assert no_cors(r)
    soon = (datetime.now(UTC) + timedelta(seconds=1.5)).isoformat().replace("+00:00", "Z")
    await make_key(org, name="w", scopes=["public"], allowedOrigins=[SITE], expiresAt=soon)
    r = await as_key(org, None, "OPTIONS", "/questions", headers={"Origin": SITE, **PREFLIGHT})
    assert r.headers.get("Access-Control-Allow-Origin") == SITE
    await asyncio.sleep(1.6)
    r = await as_key(org, None, "OPTIONS", "/questions", headers={"Origin": SITE, **PREFLIGHT})
    assert no_cors(r)


async def test_options_with_a_key_still_reports_the_methods(org: OrgClient) -> None:
    r = await org.request("OPTIONS", "/questions")
    assert r.status_code == 200
    assert "GET" in r.headers["Allow"]


async def test_preflights_naming_unknown_orgs_stop_reaching_the_database(
    org: OrgClient, engine: AsyncEngine
) -> None:
    """Each unknown org a preflight names counts as a failed authentication of the address;
    past the limit, no more org lookups reach PostgreSQL from it this minute."""
    from tests.tenancy.test_auth_abuse import an_address, failure_limit, in_one_window

    lookups: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        if "shared.organizations" in statement or "organizations" in statement:
            lookups.append(statement)

    address = an_address()
    limit = failure_limit(org.client.app)
    await in_one_window(needed_seconds=30)
    headers = {"Origin": SITE, **PREFLIGHT}
    for i in range(limit):
        r = await as_key(org, None, "OPTIONS", f"/api/v1/nope-{i}/questions", headers, address)
        assert r.status_code == 204 and no_cors(r)
    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        for i in range(5):
            path = f"/api/v1/none-{i}/questions"
            r = await as_key(org, None, "OPTIONS", path, headers, address)
            assert r.status_code == 204 and no_cors(r)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)
    assert lookups == []
