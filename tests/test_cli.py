"""The `faq` console script (CONTRACT section 1), run as a user runs it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.fixtures.orgs import unique_slug

pytestmark = pytest.mark.slow


def faq(*args: str) -> subprocess.CompletedProcess[str]:
    # A guard against a hung command, not a speed check: under a loaded CI machine a niced
    # `faq import` (batch work, niceness 10) has been seen to take over 60 s for six rows.
    return subprocess.run(
        [sys.executable, "-m", "tasks.cli", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=300,
    )


async def faq_off_loop(*args: str) -> subprocess.CompletedProcess[str]:
    """``faq`` from an async test: the command runs in a thread, so the test's event loop goes
    on. The in-process app's background tasks run on that loop (a key's ``last_used_at``
    write holds its row until it commits); blocking the loop on a command that writes the
    same row (``faq keys revoke``) waited for a lock that could not be released until the
    statement timed out."""
    return await asyncio.to_thread(faq, *args)


async def test_orgs_create_and_keys_create_print_json(client: Any) -> None:
    slug = unique_slug("cli")
    created = await faq_off_loop(
        "orgs", "create", slug, "--name", "CLI Org", "--plan", "PRO", "--json"
    )
    assert created.returncode == 0, created.stderr
    org = json.loads(created.stdout)
    assert set(org) == {"id", "slug", "name", "plan"}
    assert org["slug"] == slug and org["name"] == "CLI Org" and org["plan"] == "PRO"
    assert org["id"].startswith("org_")

    key = await faq_off_loop("keys", "create", slug, "--scopes", "read,write", "--json")
    assert key.returncode == 0, key.stderr
    issued = json.loads(key.stdout)
    assert issued["scopes"] == ["read", "write"]
    assert len(issued["fingerprint"]) == 16
    import hashlib

    assert hashlib.sha256(issued["key"].encode()).hexdigest()[:16] == issued["fingerprint"]

    # Only the hash is stored: no column of the key's row holds the key itself.
    from sqlalchemy import text

    from tenancy.db import make_engine
    from tenancy.settings import get_settings

    engine = make_engine(get_settings(), pool_size=1)
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT * FROM shared.api_keys WHERE fingerprint = :f"),
                {"f": issued["fingerprint"]},
            )
        ).one()
    await engine.dispose()
    assert row.key_hash == hashlib.sha256(issued["key"].encode()).hexdigest()
    assert issued["key"] not in str(tuple(row))

    auth = {"Authorization": f"Bearer {issued['key']}"}
    r = await client.get(f"/api/v1/{slug}/categories", headers=auth)
    assert r.status_code == 200
    assert [c["slug"] for c in (await r.get_json())["data"]] == ["uncategorized"]

    revoked = await faq_off_loop("keys", "revoke", issued["fingerprint"])
    assert revoked.returncode == 0, revoked.stderr
    import asyncio

    for _ in range(50):
        r = await client.get(f"/api/v1/{slug}/categories", headers=auth)
        if r.status_code == 401:
            break
        await asyncio.sleep(0.05)
    assert r.status_code == 401


def test_bad_input_is_refused_with_nonzero_exit() -> None:
    assert faq("orgs", "create", "Bad_Slug").returncode != 0
    assert faq("keys", "create", "no-such-org-anywhere", "--scopes", "read").returncode == 1
    assert faq("keys", "create", "x", "--scopes", "root").returncode == 2
    assert faq("keys", "revoke", "0000000000000000").returncode == 1
    slug = unique_slug("dup")
    assert faq("orgs", "create", slug).returncode == 0
    again = faq("orgs", "create", slug)
    assert again.returncode == 1 and "already exists" in again.stderr


async def test_orgs_create_with_a_locale_serves_it(client: Any) -> None:
    slug = unique_slug("locale")
    created = await faq_off_loop("orgs", "create", slug, "--locale", "pt-br", "--json")
    assert created.returncode == 0, created.stderr
    key = json.loads(
        (await faq_off_loop("keys", "create", slug, "--scopes", "read", "--json")).stdout
    )["key"]
    auth = {"Authorization": f"Bearer {key}"}
    r = await client.get(f"/api/v1/{slug}/settings", headers=auth)
    data = (await r.get_json())["data"]
    assert (data["defaultLocale"], data["locales"]) == ("pt-BR", ["pt-BR"])
    assert data["helpCenter"]["enabled"] is False
    r = await client.get(f"/api/v1/{slug}/categories/uncategorized", headers=auth)
    assert (await r.get_json())["data"]["locale"] == "pt-BR"

    bad = unique_slug("locale")
    refused = await faq_off_loop("orgs", "create", bad, "--locale", "xx-yy")
    assert refused.returncode == 2 and "locale" in refused.stderr
    assert (
        await faq_off_loop("keys", "create", bad, "--scopes", "read")
    ).returncode == 1  # no such org


def test_migrate_twice_is_a_noop() -> None:
    first = faq("migrate")
    assert first.returncode == 0, first.stderr
    second = faq("migrate")
    assert second.returncode == 0
    assert "shared: at head" in second.stdout
    assert "tenants: 0 migrated, 0 failed" in second.stdout


async def test_set_plan_takes_effect_on_the_next_request(client: Any) -> None:
    import asyncio

    slug = unique_slug("plan")
    assert (await faq_off_loop("orgs", "create", slug, "--plan", "FREE")).returncode == 0
    key = json.loads(
        (await faq_off_loop("keys", "create", slug, "--scopes", "write", "--json")).stdout
    )["key"]
    auth = {"Authorization": f"Bearer {key}"}
    url = f"/api/v1/{slug}/categories"
    for i in range(9):
        assert (await client.post(url, json={"name": f"c{i}"}, headers=auth)).status_code == 201
    assert (await client.post(url, json={"name": "over"}, headers=auth)).status_code == 402

    changed = await faq_off_loop("orgs", "set-plan", slug, "starter")
    assert changed.returncode == 0, changed.stderr
    assert "STARTER" in changed.stdout
    for _ in range(50):
        r = await client.post(url, json={"name": "over"}, headers=auth)
        if r.status_code != 402:
            break
        await asyncio.sleep(0.05)
    assert r.status_code == 201


def test_secret_key_is_a_fernet_key() -> None:
    from cryptography.fernet import Fernet

    key = faq("secret-key").stdout.strip()
    assert Fernet(key.encode()).decrypt(Fernet(key.encode()).encrypt(b"x")) == b"x"


async def test_keys_create_makes_a_publishable_key_with_name_origins_and_expiry(
    client: Any,
) -> None:
    slug = unique_slug("cli")
    assert (await faq_off_loop("orgs", "create", slug, "--json")).returncode == 0
    admin = json.loads(
        (await faq_off_loop("keys", "create", slug, "--scopes", "admin", "--json")).stdout
    )
    made = await faq_off_loop(
        "keys",
        "create",
        slug,
        "--scopes",
        "public",
        "--name",
        "website",
        "--origins",
        "https://shop.example,http://localhost:3000",
        "--expires",
        "2099-01-01T00:00:00Z",
        "--json",
    )
    assert made.returncode == 0, made.stderr
    issued = json.loads(made.stdout)
    assert issued["key"].startswith("faq_pk_")
    assert issued["scopes"] == ["public"]
    r = await client.get(
        f"/api/v1/{slug}/keys", headers={"Authorization": f"Bearer {admin['key']}"}
    )
    listed = {k["fingerprint"]: k for k in (await r.get_json())["data"]}
    key = listed[issued["fingerprint"]]
    assert key["name"] == "website"
    assert key["allowedOrigins"] == ["https://shop.example", "http://localhost:3000"]
    assert key["expiresAt"] == "2099-01-01T00:00:00.000Z"
    for bad in (
        ["--scopes", "public,read"],
        ["--scopes", "public", "--origins", "https://a.example/path"],
        ["--scopes", "read", "--origins", "https://a.example"],
        ["--scopes", "read", "--expires", "2001-01-01T00:00:00Z"],
        ["--scopes", "read", "--expires", "tomorrow"],
    ):
        assert (await faq_off_loop("keys", "create", slug, *bad)).returncode == 2, bad
