"""The org's audit log for webhooks, keys, settings and plans (issue 17): each mutation is one
entry with its actor, never a secret (no webhook secret, no key, no key hash)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from quart import Quart
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.webhooks.models import Webhook
from billing.plans import Plan
from tenancy.db import shared_session, tenant_session
from tenancy.models import ApiKey
from tenancy.orgs import OrgInfo, get_org
from tests.api.audit.conftest import relayed_audit
from tests.billing.conftest import StripeSender, billing_app, subscription_event, unique
from tests.fixtures.orgs import OrgClient, unique_slug
from tests.fixtures.stripe_api import stripe_api_server

pytestmark = pytest.mark.slow

__all__ = ["billing_app", "stripe_api_server"]

HOOK_URL = "https://127.0.0.1:9/audit-hook"
SETTINGS_DEFAULT_HC = {
    "enabled": False,
    "primaryColor": "#1f5fbf",
    "externalImages": False,
    # The help center's chrome (issue 29).
    "headerLinks": [],
    "footerLinks": [],
    "legalText": None,
    "labels": {},
    "logoUrl": None,
    # The contact link and the cards' icons (issue 41).
    "contactUrl": None,
    "categoryIcons": {},
    # Issue 39: who may read the help center, and the org's own sign-in page.
    "access": "public",
    "signInUrl": None,
}


def api_key(fingerprint: str) -> dict[str, str]:
    return {"type": "apiKey", "id": fingerprint}


def system(name: str) -> dict[str, str]:
    return {"type": "system", "id": name}


async def entries_of(engine: AsyncEngine, org: OrgClient, **query: Any) -> list[dict[str, Any]]:
    """Relay the org's outbox (as the worker would), then its entries through ``GET /audit``
    (with ``query``), oldest first."""
    found = await relayed_audit(engine, org, limit=100, **query)
    for entry in found:
        assert entry["id"].startswith("aud_") and entry["createdAt"].endswith("Z")
    return list(reversed(found))


async def raw_entries(engine: AsyncEngine, info: OrgInfo) -> str:
    """Every stored column of every audit entry of the org, as text."""
    async with tenant_session(engine, info.schema_name) as session:
        rows = (
            await session.execute(text("SELECT row_to_json(a)::text FROM audit_entries a"))
        ).all()
    return "\n".join(r[0] for r in rows)


async def assert_absent(engine: AsyncEngine, org: OrgClient, *secrets: str) -> None:
    """None of ``secrets`` is in any entry of the org (the whole JSON of ``GET /audit``, and
    every column of the stored rows)."""
    assert all(s for s in secrets)
    every = json.dumps(await entries_of(engine, org))
    raw = await raw_entries(engine, org.info)
    for secret in secrets:
        assert secret not in every
        assert secret not in raw


def strip_id(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in ("id", "createdAt")}


# ---- webhooks ---------------------------------------------------------------------------------


async def test_webhook_mutations_are_audited_without_the_secret(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    admin = api_key(org.fingerprints["admin"])
    r = await org.post(
        "/webhooks", json={"url": HOOK_URL, "events": ["category.created"], "description": "a"}
    )
    assert r.status_code == 201, await r.get_data()
    created = (await r.get_json())["data"]
    hook = created["id"]
    public = {k: v for k, v in created.items() if k != "secret"}

    r = await org.patch(
        f"/webhooks/{hook}", json={"description": "b", "events": ["category.created"]}
    )
    assert r.status_code == 200, await r.get_data()
    assert (await org.patch(f"/webhooks/{hook}", json={"description": "b"})).status_code == 200
    # A ping and a replay of it are not mutations of the webhook: no entry.
    r = await org.post(f"/webhooks/{hook}/test")
    assert r.status_code == 202, await r.get_data()
    ping = (await r.get_json())["data"]["id"]
    r = await org.post(f"/webhooks/{hook}/deliveries/{ping}/replay")
    assert r.status_code == 202, await r.get_data()
    assert (await org.patch(f"/webhooks/{hook}", json={"active": False})).status_code == 200
    r = await org.patch(f"/webhooks/{hook}", json={"active": True, "url": HOOK_URL + "2"})
    assert r.status_code == 200
    got = (await (await org.get(f"/webhooks/{hook}", scope="read")).get_json())["data"]
    assert (await org.delete(f"/webhooks/{hook}")).status_code == 204

    entries = [strip_id(e) for e in await entries_of(engine, org, resource="webhook")]

    def entry(action: str, before: Any, after: Any) -> dict[str, Any]:
        return {
            "resource": "webhook",
            "resourceId": hook,
            "action": action,
            "actor": admin,
            "before": before,
            "after": after,
        }

    assert len(entries) == 6, entries
    assert entries[:3] == [
        entry("created", None, public),
        # Changed fields only; the PATCH that changed nothing wrote nothing.
        entry("updated", {"description": "a"}, {"description": "b"}),
        entry("deactivated", {"active": True}, {"active": False}),
    ]
    # One PATCH that reactivates and changes the URL: two entries of one transaction (an
    # activation is found by its action).
    same_transaction = [entries[3], entries[4]]
    for one in (
        entry("activated", {"active": False}, {"active": True}),
        entry("updated", {"url": HOOK_URL}, {"url": HOOK_URL + "2"}),
    ):
        assert one in same_transaction
    assert entries[5] == entry("deleted", got, None)

    async with tenant_session(engine, org.info.schema_name) as session:
        ciphertext = (
            await session.execute(select(Webhook.secret_ciphertext).where(Webhook.id == hook))
        ).scalar_one()
    await assert_absent(engine, org, created["secret"], ciphertext)
    assert await entries_of(engine, other_org, resource="webhook") == []


# ---- keys ---------------------------------------------------------------------------------


async def stored_hash(engine: AsyncEngine, fingerprint: str) -> str:
    async with shared_session(engine) as session:
        digest = await session.scalar(
            select(ApiKey.key_hash).where(ApiKey.fingerprint == fingerprint)
        )
    assert digest
    return digest


async def listed_key(org: OrgClient, fingerprint: str) -> dict[str, Any]:
    r = await org.get("/keys", query={"limit": 100})
    assert r.status_code == 200
    items: list[dict[str, Any]] = (await r.get_json())["data"]
    [item] = [k for k in items if k["fingerprint"] == fingerprint]
    return item


async def test_key_creation_and_revocation_are_audited_without_the_key(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    admin = api_key(org.fingerprints["admin"])
    r = await org.post(
        "/keys",
        json={"name": "site", "scopes": ["public"], "allowedOrigins": ["https://Docs.Example.com"]},
    )
    assert r.status_code == 201, await r.get_data()
    created = (await r.get_json())["data"]
    fp = created["fingerprint"]
    shown = await listed_key(org, fp)
    assert (await org.delete(f"/keys/{fp}")).status_code == 204
    assert (await org.delete(f"/keys/{fp}")).status_code == 204  # again: nothing changes
    revoked_at = (await listed_key(org, fp))["revokedAt"]
    assert revoked_at is not None

    entries = [strip_id(e) for e in await entries_of(engine, org, resource="key")]
    assert entries == [
        {
            "resource": "key",
            "resourceId": fp,
            "action": "created",
            "actor": admin,
            "before": None,
            "after": shown,  # the shape of GET /keys: never the key nor its hash
        },
        {
            "resource": "key",
            "resourceId": fp,
            "action": "revoked",
            "actor": admin,
            "before": {"revokedAt": None},
            "after": {"revokedAt": revoked_at},
        },
    ]
    await assert_absent(engine, org, created["key"], await stored_hash(engine, fp))
    assert await entries_of(engine, other_org, resource="key") == []


# ---- settings -----------------------------------------------------------------------------


async def test_settings_changes_are_audited_with_the_changed_fields(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    admin = api_key(org.fingerprints["admin"])
    assert (await org.patch("/settings", json={"locales": ["en", "fr"]})).status_code == 200
    assert (await org.patch("/settings", json={"locales": ["en", "fr"]})).status_code == 200
    r = await org.patch(
        "/settings", json={"defaultLocale": "fr", "helpCenter": {"enabled": True, "title": "Aide"}}
    )
    assert r.status_code == 200, await r.get_data()
    entries = [strip_id(e) for e in await entries_of(engine, org, resource="settings")]
    hc_before = {**SETTINGS_DEFAULT_HC, "title": org.info.name}
    assert entries == [
        {
            "resource": "settings",
            "resourceId": None,
            "action": "updated",
            "actor": admin,
            "before": {"locales": ["en"]},
            "after": {"locales": ["en", "fr"]},
        },
        {
            "resource": "settings",
            "resourceId": None,
            "action": "updated",
            "actor": admin,
            "before": {"defaultLocale": "en", "helpCenter": hc_before},
            "after": {
                "defaultLocale": "fr",
                "helpCenter": {**hc_before, "enabled": True, "title": "Aide"},
            },
        },
    ]
    assert await entries_of(engine, other_org, resource="settings") == []


# ---- plans ----------------------------------------------------------------------------------


@pytest.fixture
async def stripe_sender(billing_app: Quart, engine: AsyncEngine) -> AsyncIterator[StripeSender]:
    yield StripeSender(billing_app.test_client(), engine)


async def test_a_plan_change_from_stripe_is_audited_once(
    org_factory: Any, other_org: OrgClient, stripe_sender: StripeSender, engine: AsyncEngine
) -> None:
    org = await org_factory(Plan.FREE)
    body = subscription_event("created", unique("sub"), lookup_key="pro", org=org.slug)
    assert await stripe_sender.deliver(body) == "plan_changed"
    assert await stripe_sender.deliver(body) == "plan_changed"  # Stripe's retry: applied once
    entries = [strip_id(e) for e in await entries_of(engine, org, resource="plan")]
    assert entries == [
        {
            "resource": "plan",
            "resourceId": None,
            "action": "changed",
            "actor": system("stripe"),
            "before": {"plan": "FREE"},
            "after": {"plan": "PRO"},
        }
    ]
    assert await entries_of(engine, other_org, resource="plan") == []


def faq(*args: str) -> subprocess.CompletedProcess[str]:
    """The ``faq`` console script, as tests/test_cli.py runs it."""
    return subprocess.run(
        [sys.executable, "-m", "tasks.cli", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )


async def test_cli_plan_changes_and_keys_are_audited_as_the_cli(
    client: Any, engine: AsyncEngine
) -> None:
    slug = unique_slug("audit-cli")
    assert faq("orgs", "create", slug, "--plan", "FREE").returncode == 0
    info = await get_org(engine, slug)
    changed = faq("orgs", "set-plan", slug, "pro")
    assert changed.returncode == 0, changed.stderr
    assert faq("orgs", "set-plan", slug, "pro").returncode == 0  # the same plan: no change
    made = faq("keys", "create", slug, "--scopes", "admin", "--name", "ops", "--json")
    assert made.returncode == 0, made.stderr
    issued = json.loads(made.stdout)
    cli = OrgClient(client, info, keys={"admin": issued["key"]})
    fp = issued["fingerprint"]
    # Listed with that very key: its first use is after the entry was written.
    shown = {**await listed_key(cli, fp), "lastUsedAt": None}
    # The key's first use has its lastUsedAt written by a task of this event loop: the CLI
    # runs in a thread, so that task can finish (on Citus, api_keys is a reference table,
    # whose writes wait for each other).
    created = await asyncio.to_thread(faq, "keys", "create", slug, "--scopes", "read", "--json")
    other = json.loads(created.stdout)
    assert (await asyncio.to_thread(faq, "keys", "revoke", other["fingerprint"])).returncode == 0
    revoked_at = (await listed_key(cli, other["fingerprint"]))["revokedAt"]

    assert [strip_id(e) for e in await entries_of(engine, cli, resource="plan")] == [
        {
            "resource": "plan",
            "resourceId": None,
            "action": "changed",
            "actor": system("cli"),
            "before": {"plan": "FREE"},
            "after": {"plan": "PRO"},
        }
    ]
    keys = [strip_id(e) for e in await entries_of(engine, cli, resource="key")]
    assert keys[0] == {
        "resource": "key",
        "resourceId": fp,
        "action": "created",
        "actor": system("cli"),
        "before": None,
        "after": shown,
    }
    assert [(e["resourceId"], e["action"], e["actor"]) for e in keys[1:]] == [
        (other["fingerprint"], "created", system("cli")),
        (other["fingerprint"], "revoked", system("cli")),
    ]
    assert keys[2]["after"] == {"revokedAt": revoked_at}
    await assert_absent(
        engine,
        cli,
        issued["key"],
        other["key"],
        await stored_hash(engine, fp),
        await stored_hash(engine, other["fingerprint"]),
    )


# ---- members (issue 30) ---------------------------------------------------------------------


async def test_member_changes_are_listed_by_resource_member(
    org: OrgClient, other_org: OrgClient, engine: AsyncEngine
) -> None:
    admin = api_key(org.fingerprints["admin"])
    body = {"email": "ada@example.com", "name": "Ada", "role": "editor"}
    r = await org.post("/members", json=body)
    assert r.status_code == 201, await r.get_data()
    member = (await r.get_json())["data"]
    assert member["id"].startswith("mem_")
    assert (await org.patch(f"/members/{member['id']}", json={"role": "author"})).status_code == 200
    assert (await org.delete(f"/members/{member['id']}")).status_code == 204
    entries = [strip_id(e) for e in await entries_of(engine, org, resource="member")]
    assert [(e["resource"], e["resourceId"], e["action"], e["actor"]) for e in entries] == [
        ("member", member["id"], "created", admin),
        ("member", member["id"], "updated", admin),
        ("member", member["id"], "deactivated", admin),
    ]
    assert entries[0]["before"] is None and entries[0]["after"] == member
    assert entries[1]["before"] == {"role": "editor"} and entries[1]["after"] == {"role": "author"}
    assert await entries_of(engine, other_org, resource="member") == []
