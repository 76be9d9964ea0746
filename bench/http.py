"""A tiny blocking HTTP client for set-up calls (not for load: load is wrk's job)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def call(
    base: str, method: str, path: str, key: str, body: Any = None, timeout: float = 30
) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def ok(base: str, method: str, path: str, key: str, body: Any = None) -> Any:
    status, raw = call(base, method, path, key, body)
    if status >= 300:
        raise RuntimeError(f"{method} {path}: {status} {raw[:300]!r}")
    return json.loads(raw) if raw else None
