"""The FAQ_SECRET_KEY rotation script in docs/operations.md, run as the doc says
(`python -` with the script on stdin, in the API's environment) against a real webhook."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from cryptography.fernet import Fernet, InvalidToken

from tenancy.embedded import free_port
from tests.helm.processes import LOCAL_FAQ, http, processes
from tests.helm.rendering import REPO

pytestmark = pytest.mark.slow

OPERATIONS = REPO / "docs" / "operations.md"
LOCAL_PYTHON = str(REPO / ".venv" / "bin" / "python")


def documented_steps() -> str:
    text = OPERATIONS.read_text()
    match = re.search(r"## Rotating `FAQ_SECRET_KEY`\n(.*?)\n## ", text, re.S)
    assert match, "the rotation procedure is missing from docs/operations.md"
    return match.group(1)


# Every org's HS256 reader token secrets (issue 39), for ``stored_ciphertexts``.
READER_SECRETS = (
    "SELECT k->>'secret' FROM shared.organizations, "
    "jsonb_array_elements(readers->'keys') k WHERE k ? 'secret'"
)


def stored_ciphertexts(env: dict[str, str], shared_query: str | None = None) -> list[str]:
    """The webhook secrets' ciphertexts of every org, or what ``shared_query`` selects."""
    if shared_query is not None:
        return _probe(
            env, f"        found = (await conn.execute(text({shared_query!r}))).scalars().all()\n"
        )
    return _probe(
        env,
        "        schemas = (await conn.execute(text("
        "'SELECT schema_name FROM shared.organizations'))).scalars().all()\n"
        "        found = []\n"
        "        for schema in schemas:\n"
        "            found += (await conn.execute(text("
        "f'SELECT secret_ciphertext FROM \"{schema}\".webhooks'))).scalars().all()\n",
    )


def _probe(env: dict[str, str], body: str) -> list[str]:
    probe = (
        "import asyncio, json\n"
        "from sqlalchemy import text\n"
        "from tenancy.db import make_engine\n"
        "from tenancy.settings import get_settings\n"
        "async def main():\n"
        "    engine = make_engine(get_settings(), pool_size=1)\n"
        "    async with engine.connect() as conn:\n" + body + "    await engine.dispose()\n"
        "    print(json.dumps(found))\n"
        "asyncio.run(main())\n"
    )
    result = subprocess.run(
        [LOCAL_PYTHON, "-"], input=probe, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    found: list[str] = json.loads(result.stdout)
    return found


def test_documented_rotation_re_encrypts_webhook_secrets_under_the_new_key(
    tmp_path: Path, fresh_database: str, spare_redis: str
) -> None:
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DATABASE_URL": fresh_database,
        "REDIS_URL": spare_redis,
        "FAQ_SECRET_KEY": old_key,
        "FAQ_LOG_LEVEL": "WARNING",
    }
    faq = [LOCAL_FAQ]
    subprocess.run([*faq, "migrate"], env=env, check=True, capture_output=True, timeout=120)
    for slug in ("rot-a", "rot-b"):
        subprocess.run(
            [*faq, "orgs", "create", slug, "--plan", "STARTER"],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
    issued = subprocess.run(
        [*faq, "keys", "create", "rot-a", "--scopes", "admin", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    key = json.loads(issued.stdout)["key"]

    port = free_port()
    with processes(tmp_path, tmp_path) as group:
        group.start("api", [*faq, "serve", "--bind", f"127.0.0.1:{port}"], env)
        base = f"http://127.0.0.1:{port}"
        group.wait_for("the API", lambda: http("GET", base + "/readyz")[0] == 200, 90)
        status, body = http(
            "POST",
            base + "/api/v1/rot-a/webhooks",
            {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            json.dumps(
                {"url": "https://hooks.example.invalid/faq", "events": ["question.created"]}
            ).encode(),
        )
        assert status == 201, body
        secret = json.loads(body)["data"]["secret"]
        # Issue 39: a reader token secret is stored under the key as well.
        status, body = http(
            "PUT",
            base + "/api/v1/rot-a/settings/readers",
            {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            json.dumps({"keys": [{"kid": "app", "alg": "HS256"}]}).encode(),
        )
        assert status == 200, body
        reader_secret = json.loads(body)["data"]["keys"][0]["secret"]
        group.running[0].process.terminate()
        assert group.running[0].process.wait(30) == 0

    (before,) = stored_ciphertexts(env)
    assert Fernet(old_key).decrypt(before.encode()).decode() == secret
    (reader_before,) = stored_ciphertexts(env, READER_SECRETS)
    assert Fernet(old_key).decrypt(reader_before.encode()).decode() == reader_secret

    steps = documented_steps()
    assert "faq secret-key rotate" in steps and "NEW,OLD" in steps
    # Step 2: every process runs with NEW,OLD; step 3: `faq secret-key rotate`.
    both = {**env, "FAQ_SECRET_KEY": f"{new_key},{old_key}"}
    rotated = subprocess.run(
        [*faq, "secret-key", "rotate"], env=both, capture_output=True, text=True, timeout=60
    )
    assert rotated.returncode == 0, rotated.stderr
    assert "rot-a: 1 webhook secrets re-encrypted" in rotated.stdout
    assert "rot-b: 0 webhook secrets re-encrypted" in rotated.stdout
    done = "done: 1 reader secrets (token keys and OpenID Connect clients) now under the newest key"
    assert done in rotated.stdout
    # Running it again is harmless.
    again = subprocess.run(
        [*faq, "secret-key", "rotate"], env=both, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 0, again.stderr

    (after,) = stored_ciphertexts(env)
    assert after != before
    assert Fernet(new_key).decrypt(after.encode()).decode() == secret
    with pytest.raises(InvalidToken):
        Fernet(old_key).decrypt(after.encode())
    (reader_after,) = stored_ciphertexts(env, READER_SECRETS)
    assert Fernet(new_key).decrypt(reader_after.encode()).decode() == reader_secret
    with pytest.raises(InvalidToken):
        Fernet(old_key).decrypt(reader_after.encode())
