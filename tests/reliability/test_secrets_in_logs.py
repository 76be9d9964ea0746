"""No secret, API key or signature in any log line of a run (the logs are grepped)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tenancy.embedded import free_port
from tests.fixtures.live_server import org_with_admin_key

pytestmark = pytest.mark.slow


def _call(method: str, url: str, key: str, body: object | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_logs_hold_no_keys_secrets_or_signatures(tmp_path: Path) -> None:
    slug, key = org_with_admin_key("logs", "PRO")
    log_path = tmp_path / "api.log"
    port = free_port()
    env = {**os.environ, "FAQ_LOG_LEVEL": "DEBUG"}
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "tasks.cli", "serve", "--bind", f"127.0.0.1:{port}"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}/api/v1/{slug}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                    break
                except OSError:
                    assert time.monotonic() < deadline
                    time.sleep(0.2)
            secrets: list[str] = [key]
            assert _call("GET", f"{base}/categories", key)[0] == 200
            assert _call("GET", f"{base}/categories", key + "x")[0] == 401
            assert _call("POST", f"{base}/categories", key, {"name": "Logged"})[0] == 201
            status, body = _call(
                "POST",
                f"{base}/webhooks",
                key,
                {"url": "https://127.0.0.1:9/hook", "events": ["category.created"]},
            )
            if status == 201:
                secrets.append(json.loads(body)["data"]["secret"])
            assert _call("POST", f"{base}/categories", key, {"name": 5})[0] == 400
        finally:
            server.terminate()
            server.wait(20)
    text = log_path.read_text()
    events = [json.loads(line).get("event") for line in text.splitlines() if line.startswith("{")]
    assert "request" in events  # the access log was written (JSON lines)
    for secret in secrets:
        assert secret not in text
        assert secret[4:24] not in text
    for marker in ("Bearer", "whsec_", "v1=", "Authorization"):
        assert marker not in text, marker
