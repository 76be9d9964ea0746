"""Helpers of the key tests: keys made through the API, requests as a given key."""

from __future__ import annotations

from typing import Any

from tests.fixtures.orgs import OrgClient

SITE = "https://shop.example"
OTHER_SITE = "https://evil.example"


async def make_key(org: OrgClient, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "a key")
    body.setdefault("scopes", ["read"])
    r = await org.post("/keys", json=body)
    assert r.status_code == 201, await r.get_data()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def make_public_key(org: OrgClient, origins: list[str] | None = None) -> dict[str, Any]:
    return await make_key(org, name="website", scopes=["public"], allowedOrigins=origins or [SITE])


async def as_key(
    org: OrgClient,
    key: str | None,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    address: str | None = None,
    **kwargs: Any,
) -> Any:
    sent = dict(headers or {})
    if key is not None:
        sent["Authorization"] = f"Bearer {key}"
    if address is not None:
        kwargs["scope_base"] = {"client": (address, 40000)}
    url = path if path.startswith("/api/") else f"/api/v1/{org.slug}{path}"
    return await org.client.open(url, method=method, headers=sent, **kwargs)
