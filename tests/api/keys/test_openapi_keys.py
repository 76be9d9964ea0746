"""``/openapi.json`` documents the keys routes (tag ``keys``) and the publishable keys."""

from __future__ import annotations

from typing import Any


async def test_the_keys_routes_are_documented(client: Any) -> None:
    spec = await (await client.get("/openapi.json")).get_json()
    paths = spec["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/{org}/keys"])
    assert "delete" in paths["/api/v1/{org}/keys/{fingerprint}"]
    for operation in (
        paths["/api/v1/{org}/keys"]["get"],
        paths["/api/v1/{org}/keys"]["post"],
        paths["/api/v1/{org}/keys/{fingerprint}"]["delete"],
    ):
        assert operation["tags"] == ["keys"]
    assert "keys" in [t["name"] for t in spec["tags"]]
    assert "409" in paths["/api/v1/{org}/keys/{fingerprint}"]["delete"]["responses"]
    created = paths["/api/v1/{org}/keys"]["post"]["responses"]["201"]
    assert created["content"]["application/json"]["schema"]
    assert "requestBody" in paths["/api/v1/{org}/keys"]["post"]
    # The public scope and the reads it reaches are described.
    assert "public" in spec["components"]["securitySchemes"]["bearer"]["description"]
    listing = paths["/api/v1/{org}/questions"]["get"]
    assert "publishable key" in listing["description"].lower()
