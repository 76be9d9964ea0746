"""Load from a separate process on 127.0.0.1: ``wrk`` with a generated Lua script (fixed
request lists, or a unique body per request for writes), every run bounded by ``-d``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONNECTIONS = 16
THREADS = 1  # one load thread keeps a core for the server and PostgreSQL on a 2-core box

DONE = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
"""


@dataclass
class LoadResult:
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    requests: int
    errors: int

    def as_json(self) -> dict[str, Any]:
        return {
            "rps": round(self.rps, 1),
            "p50_ms": round(self.p50_ms, 2),
            "p90_ms": round(self.p90_ms, 2),
            "p99_ms": round(self.p99_ms, 2),
            "requests": self.requests,
            "errors": self.errors,
        }


def ensure_wrk() -> str:
    """``command -v wrk || (apt-get update && apt-get install -y wrk)`` (Debian package)."""
    found = shutil.which("wrk")
    if found is None and shutil.which("apt-get") is not None:
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        print("wrk not found: installing the Debian package", flush=True)
        subprocess.run([*sudo, "apt-get", "update", "-qq"], check=False, timeout=300)
        subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "wrk"], check=False, timeout=300)
        found = shutil.which("wrk")
    if found is None:
        raise RuntimeError("wrk is not installed and could not be (apt-get install wrk)")
    return found


def wrk_binary() -> str:
    found = shutil.which("wrk")
    if found is None:
        raise RuntimeError("wrk is not installed (make bench installs it: apt-get install wrk)")
    return found


def _lua_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid Lua string literal here


def request_list_script(requests: Sequence[tuple[str, str, dict[str, str], str | None]]) -> str:
    """Each connection walks the list round-robin from a random start (spread, no hot spot)."""
    lines = ["local raw = {"]
    for method, path, headers, body in requests:
        hdrs = ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items())
        lua_body = _lua_string(body) if body is not None else "nil"
        lines.append(f"  {{{_lua_string(method)}, {_lua_string(path)}, {{{hdrs}}}, {lua_body}}},")
    lines.append("}")
    lines.append(
        """
local reqs = {}
local i = 0
init = function(args)
  for n, r in ipairs(raw) do reqs[n] = wrk.format(r[1], r[2], r[3], r[4]) end
  math.randomseed(os.time())
  i = math.random(#reqs)
end
request = function()
  i = (i % #reqs) + 1
  return reqs[i]
end
"""
    )
    return "\n".join(lines) + DONE


def unique_post_script(path: str, headers: dict[str, str], body_template: str) -> str:
    """POST with a body made unique per request: ``@N@`` in the template becomes a counter."""
    hdrs = ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items())
    return (
        f"""
local path = {_lua_string(path)}
local headers = {{{hdrs}}}
local template = {_lua_string(body_template)}
local n = 0
local tag = ""
init = function(args)
  math.randomseed(os.time() + os.clock() * 1000000)
  tag = tostring(math.random(1, 1000000000))
end
request = function()
  n = n + 1
  local body = string.gsub(template, "@N@", tag .. "-" .. n)
  return wrk.format("POST", path, headers, body)
end
"""
        + DONE
    )


def unique_request_list_script(
    method: str, paths: Sequence[str], headers: dict[str, str], body_template: str
) -> str:
    """``method`` on ``paths`` round-robin from a random start, each body made unique per
    request (``@N@`` in the template becomes a counter)."""
    hdrs = ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items())
    listed = ", ".join(_lua_string(p) for p in paths)
    return (
        f"""
local paths = {{{listed}}}
local headers = {{{hdrs}}}
local template = {_lua_string(body_template)}
local n = 0
local i = 0
local tag = ""
init = function(args)
  math.randomseed(os.time() + os.clock() * 1000000)
  tag = tostring(math.random(1, 1000000000))
  i = math.random(#paths)
end
request = function()
  n = n + 1
  i = (i % #paths) + 1
  local body = string.gsub(template, "@N@", tag .. "-" .. n)
  return wrk.format({_lua_string(method)}, paths[i], headers, body)
end
"""
        + DONE
    )


def run_wrk(
    base_url: str,
    script: str,
    *,
    seconds: float,
    connections: int = CONNECTIONS,
    threads: int = THREADS,
) -> LoadResult:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script)
        script_path = fh.name
    try:
        out = subprocess.run(
            [
                wrk_binary(),
                f"-t{threads}",
                f"-c{connections}",
                f"-d{max(1, round(seconds))}s",
                "--timeout",
                "10s",
                "-s",
                script_path,
                base_url,
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=True,
        )
    finally:
        Path(script_path).unlink(missing_ok=True)
    line = next(x for x in out.stdout.splitlines() if x.startswith("BENCHJSON "))
    data = json.loads(line.removeprefix("BENCHJSON "))
    errors = sum(data[k] for k in ("connect", "read", "write", "status", "timeout"))
    return LoadResult(
        rps=data["requests"] / (data["duration_us"] / 1e6),
        p50_ms=data["p50_us"] / 1000,
        p90_ms=data["p90_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        requests=data["requests"],
        errors=errors,
    )


def mixed_script(
    gets: Sequence[tuple[str, dict[str, str]]],
    post_path: str,
    post_headers: dict[str, str],
    body_template: str,
    post_every: int = 10,
) -> str:
    """Reads and writes mixed on each connection: every ``post_every``-th request is a POST
    with a unique body (``@N@`` in the template becomes a counter), the others walk ``gets``
    (path, headers) round-robin from a random start. ``post_every=10``: 90% GET, 10% POST."""
    lines = ["local raw = {"]
    for path, headers in gets:
        hdrs = ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items())
        lines.append(f"  {{{_lua_string(path)}, {{{hdrs}}}}},")
    lines.append("}")
    post_hdrs = ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in post_headers.items())
    lines.append(
        f"""
local post_path = {_lua_string(post_path)}
local post_headers = {{{post_hdrs}}}
local template = {_lua_string(body_template)}
local every = {int(post_every)}
local reqs = {{}}
local i = 0
local n = 0
local tag = ""
init = function(args)
  for k, r in ipairs(raw) do reqs[k] = wrk.format("GET", r[1], r[2], nil) end
  math.randomseed(os.time() + os.clock() * 1000000)
  i = math.random(#reqs)
  n = math.random(every) - 1
  tag = tostring(math.random(1, 1000000000))
end
request = function()
  n = n + 1
  if n % every == 0 then
    local body = string.gsub(template, "@N@", tag .. "-" .. n)
    return wrk.format("POST", post_path, post_headers, body)
  end
  i = (i % #reqs) + 1
  return reqs[i]
end
"""
    )
    return "\n".join(lines) + DONE
