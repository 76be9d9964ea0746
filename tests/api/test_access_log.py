"""The access log of a real ``faq serve`` (issue 14 made it cheaper, not different): one JSON
line per request on stdout with the request's id (whole), method, route, path, status and
duration (and a 4xx/5xx's error code, issue 41), its level and an ISO timestamp; the other
lines of that request carry the same id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tenancy.embedded import free_port

pytestmark = pytest.mark.slow

FIELDS = {
    "event",
    "method",
    "route",
    "path",
    "status",
    "duration_ms",
    "request_id",
    "level",
    "timestamp",
}


def test_every_request_logs_one_json_line_with_its_fields(tmp_path: Path) -> None:
    port = free_port()
    out = tmp_path / "serve.log"
    with out.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "tasks.cli", "serve", "--bind", f"127.0.0.1:{port}"],
            env={**os.environ, "FAQ_LOG_LEVEL": "INFO"},
            stdout=log,
            stderr=subprocess.DEVNULL,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "not ready"
                time.sleep(0.2)
        request = urllib.request.Request(f"{base}/healthz", headers={"X-Request-Id": "abc-123"})
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.headers["X-Request-Id"] == "abc-123"
        missing = urllib.request.Request(f"{base}/nowhere", headers={"X-Request-Id": "abc-404"})
        try:
            urllib.request.urlopen(missing, timeout=5)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
        deadline = time.monotonic() + 10
        lines: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            lines = [
                json.loads(line)
                for line in out.read_text().splitlines()
                if line.startswith("{") and '"request_id":' in line.replace(" ", "")
            ]
            if any(line.get("request_id") == "abc-404" for line in lines):
                break
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(20)
    ours = [line for line in lines if line.get("request_id") in ("abc-123", "abc-404")]
    assert len(ours) == 2, ours
    ok, missing_line = ours
    assert set(ok) == FIELDS and set(missing_line) == FIELDS | {"error"}
    assert missing_line["path"] == "/nowhere"  # issue 32: a 404's line says which path
    assert missing_line["error"] == "route_not_found"  # issue 41: and the error code
    assert ok["path"] == "/healthz"
    assert ok["event"] == "request" and ok["level"] == "info"
    assert (ok["method"], ok["route"], ok["status"]) == ("GET", "/healthz", 200)
    assert (missing_line["route"], missing_line["status"]) == ("unmatched", 404)
    assert isinstance(ok["duration_ms"], float | int) and ok["duration_ms"] >= 0
    assert str(ok["timestamp"]).endswith("Z") and "T" in str(ok["timestamp"])
