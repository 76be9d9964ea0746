"""Readers under a flood of bad keys: ten orgs read (``GET /questions?limit=20``) while one
process sends random unknown keys at full speed; the readers' p99 beside the same readers
without the flood, in the same run.

    .venv/bin/python -m bench.auth_flood [--seconds 5]

Standalone it starts its own embedded PostgreSQL and Redis (``bench.services.World``), runs
``faq migrate``, creates ten orgs through the real provisioning code (``bench.seed``) and
serves the app as deployed (response cache on). From ``make bench``:
``auth_flood_rows(bench)`` uses the bench's server and ten of its orgs and returns the row
(``for entry in auth_flood_rows(self): self.row(**entry)``).

Load: wrk from 127.0.0.1, bounded by ``--seconds``. The flood is a second wrk (one thread,
``FLOOD_CONNECTIONS`` connections), a new random ``faq_`` key on every request; it comes from
the readers' address (127.0.0.1), so it also shows that the failed-authentication limit
(429 past ``FAQ_AUTH_FAILURES_PER_MINUTE``) leaves valid keys from that address alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.services import World
from bench.standalone import in_world, report

ORGS = 10
READER_CONNECTIONS = 10
FLOOD_CONNECTIONS = 8
TARGET_RATIO = 1.5

FLOOD_SCRIPT = """
local path = %s
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
init = function(args)
  math.randomseed(os.time() + os.clock() * 1000000)
end
request = function()
  local t = {}
  for n = 1, 43 do
    local c = math.random(1, 64)
    t[n] = string.sub(alphabet, c, c)
  end
  return wrk.format("GET", path, {["Authorization"] = "Bearer faq_" .. table.concat(t)})
end
"""


def _readers_script(records: list[dict[str, Any]]) -> str:
    reqs = [
        (
            "GET",
            f"/api/v1/{r['slug']}/questions?limit=20",
            {"Authorization": f"Bearer {r['key']}"},
            None,
        )
        for r in records
    ]
    return load.request_list_script(reqs)


def _start_flood(base: str, slug: str, seconds: float) -> tuple[subprocess.Popen[str], Path]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(FLOOD_SCRIPT % json.dumps(f"/api/v1/{slug}/questions") + load.DONE)
    argv = [
        load.wrk_binary(),
        "-t1",
        f"-c{FLOOD_CONNECTIONS}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "-s",
        fh.name,
        base,
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), Path(
        fh.name
    )


def measure(base: str, records: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """The readers' run without the flood, then the same run with it (the flood starts a
    second before the readers and ends a second after them)."""
    script = _readers_script(records)
    load.run_wrk(base, script, seconds=1, connections=READER_CONNECTIONS)  # warm
    quiet = load.run_wrk(base, script, seconds=seconds, connections=READER_CONNECTIONS)
    flood, script_path = _start_flood(base, records[0]["slug"], seconds + 2)
    try:
        time.sleep(1)
        flooded = load.run_wrk(base, script, seconds=seconds, connections=READER_CONNECTIONS)
        out, _ = flood.communicate(timeout=seconds + 60)
    finally:
        if flood.poll() is None:
            flood.kill()
            flood.wait()
        script_path.unlink(missing_ok=True)
    line = next(x for x in out.splitlines() if x.startswith("BENCHJSON "))
    data = json.loads(line.removeprefix("BENCHJSON "))
    return {
        "quiet": quiet.as_json(),
        "flooded": flooded.as_json(),
        "flood": {
            "rps": round(data["requests"] / (data["duration_us"] / 1e6), 1),
            "requests": data["requests"],
            "p99_ms": round(data["p99_us"] / 1000, 2),
        },
    }


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    quiet, flooded = found["quiet"], found["flooded"]
    ratio = flooded["p99_ms"] / quiet["p99_ms"] if quiet["p99_ms"] else None
    return [
        {
            "name": f"readers p99 under a bad-key flood ({ORGS} orgs)",
            "measured_as": (
                f"GET /questions, {READER_CONNECTIONS} conns, while one wrk sends random keys "
                f"({FLOOD_CONNECTIONS} conns, {found['flood']['rps']:.0f} req/s); ref: no flood"
            ),
            "figure": flooded["p99_ms"],
            "reference": quiet["p99_ms"],
            "unit": "ms",
            "target": f"<= {TARGET_RATIO}x no flood",
            "met": ratio is not None and ratio <= TARGET_RATIO and not flooded["errors"],
            "runs": found,
        }
    ]


def auth_flood_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``for entry in auth_flood_rows(self): self.row(**entry)``.
    Uses the bench's server (``bench.service``) and ten of its orgs (``bench.all_orgs``)."""
    records = bench.all_orgs[1 : ORGS + 1]
    return rows(measure(bench.service.base, records, bench.seconds))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.auth_flood")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)

    def work(world: World) -> dict[str, Any]:
        records = seed.create_orgs(
            [f"bench-flood-{n:02d}" for n in range(ORGS)],
            out_dir=world.tmp / "orgs",
            processes=1,
            questions_each=25,
        )
        return measure(world.serve().base, records, args.seconds)

    found = in_world(work)
    return report(rows(found), found)


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
