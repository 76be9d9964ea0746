"""The last-admin-key rule counts only admin keys with no expiry (issue 26): revoking the
org's only non-expiring admin key while an expiring one exists would leave the org without
admin access once that one expires, so it is refused (409 ``last_admin_key``), and keys
cannot be changed in place (no PATCH or PUT) to get round the rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import shared_session
from tenancy.models import ApiKey
from tests.api.keys.helpers import as_key, make_key
from tests.fixtures.orgs import OrgClient


def in_a_day() -> str:
    return (datetime.now(UTC) + timedelta(days=1)).isoformat().replace("+00:00", "Z")


async def listed(org: OrgClient, key: str | None = None) -> dict[str, dict[str, Any]]:
    r = await as_key(org, key or org.keys["admin"], "GET", "/keys?limit=100")
    assert r.status_code == 200
    return {k["fingerprint"]: k for k in (await r.get_json())["data"]}


async def refused(org: OrgClient, key: str, fingerprint: str) -> None:
    r = await as_key(org, key, "DELETE", f"/keys/{fingerprint}")
    assert r.status_code == 409, await r.get_data()
    assert (await r.get_json())["error"]["code"] == "last_admin_key"
    assert (await listed(org, key))[fingerprint]["revokedAt"] is None


async def test_an_expiring_admin_key_does_not_count_as_the_last_admin(org: OrgClient) -> None:
    expiring = await make_key(org, scopes=["admin"], expiresAt=in_a_day())
    original = org.fingerprints["admin"]
    # Neither by the original key nor by the expiring one.
    await refused(org, org.keys["admin"], original)
    await refused(org, expiring["key"], original)
    # The original still works; the expiring one can go.
    assert (await org.get("/keys")).status_code == 200
    r = await org.delete(f"/keys/{expiring['fingerprint']}")
    assert r.status_code == 204
    assert (await listed(org))[expiring["fingerprint"]]["revokedAt"] is not None


async def test_with_two_admin_keys_with_no_expiry_one_can_go(org: OrgClient) -> None:
    second = await make_key(org, scopes=["admin"])
    expiring = await make_key(org, scopes=["admin"], expiresAt=in_a_day())
    r = await org.delete(f"/keys/{org.fingerprints['admin']}")
    assert r.status_code == 204, await r.get_data()
    # Now the second is the last with no expiry: the expiring key cannot revoke it.
    await refused(org, expiring["key"], second["fingerprint"])
    await refused(org, second["key"], second["fingerprint"])


async def test_admin_keys_that_all_expire_are_kept_until_one_has_no_expiry(
    org: OrgClient, engine: AsyncEngine
) -> None:
    """An org whose admin keys all expire (made so by ops): none can be revoked by API until
    an admin key with no expiry exists; other keys can."""
    expiring = await make_key(org, scopes=["admin"], expiresAt=in_a_day())
    async with shared_session(engine) as session, session.begin():
        await session.execute(
            update(ApiKey)
            .where(ApiKey.fingerprint == org.fingerprints["admin"])
            .values(expires_at=datetime.now(UTC) + timedelta(days=2))
        )
    await refused(org, org.keys["admin"], expiring["fingerprint"])
    await refused(org, expiring["key"], org.fingerprints["admin"])
    r = await org.delete(f"/keys/{org.fingerprints['read']}")
    assert r.status_code == 204
    lasting = await make_key(org, scopes=["admin"])
    for fingerprint in (expiring["fingerprint"], org.fingerprints["admin"]):
        r = await as_key(org, lasting["key"], "DELETE", f"/keys/{fingerprint}")
        assert r.status_code == 204, await r.get_data()
    await refused(org, lasting["key"], lasting["fingerprint"])


async def test_a_key_cannot_be_changed_in_place(org: OrgClient) -> None:
    """No route changes a key's scopes or expiry (the rule cannot be bypassed by turning the
    last admin key into a read key or an expiring one): PATCH and PUT are 405, and the key
    is as it was."""
    fingerprint = org.fingerprints["admin"]
    before = (await listed(org))[fingerprint]
    before.pop("lastUsedAt")
    for method in ("PATCH", "PUT"):
        for body in ({"scopes": ["read"]}, {"expiresAt": in_a_day()}):
            r = await as_key(org, org.keys["admin"], method, f"/keys/{fingerprint}", json=body)
            assert r.status_code == 405, (method, body, r.status_code)
            assert (await r.get_json())["error"]["code"] == "method_not_allowed"
    after = (await listed(org))[fingerprint]
    after.pop("lastUsedAt")  # recorded off the request: not a change of the key
    assert after == before
