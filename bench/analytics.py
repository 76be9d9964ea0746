"""The content analytics row (issue 17): what recording readers' searches, clicks and views
costs the help center. Two services on the same world, one with ``FAQ_CONTENT_ANALYTICS``
on (the default) and one with it off; the help center's search page
(``GET /hc/{org}/en/search?q=...``) and its cached question page, each measured on both with
wrk (``load.CONNECTIONS`` connections), rounds alternating on/off (ABBA…) so drift of the
machine hits both alike. Target: with recording on, each page keeps >= 0.95x its throughput
with recording off.

    .venv/bin/python -m bench.analytics [--seconds 8]

From ``make bench``: ``analytics_rows(bench)`` uses the bench's world, starts its own two
services (and a third that makes the content) and stops them, and returns the rows
(``for entry in analytics_rows(self): self.row(**entry)``). Each row also carries the CPU
seconds per 1,000 requests of the API and of Redis on each side (``cpu_s_per_1k_by_side``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.cpu import Meter, per_thousand
from bench.help_center import ANSWER
from bench.http import ok
from bench.standalone import in_world

ORG = "bench-analytics"
ROUNDS = 6
TARGET = 0.95
QUERY = "rotate key"
PAGES = {"search": "search?q=...", "question": "questions/{slug}"}


def prepare(base: str, key: str) -> dict[str, str]:
    """The help center on, a category and a published question; the pages' paths."""
    ok(base, "PATCH", f"/api/v1/{ORG}/settings", key, {"helpCenter": {"enabled": True}})
    category = ok(base, "POST", f"/api/v1/{ORG}/categories", key, {"name": "API keys"})["data"]
    question = ok(
        base,
        "POST",
        f"/api/v1/{ORG}/questions",
        key,
        {
            "title": "How do I rotate an API key?",
            "answer": ANSWER,
            "categoryId": category["id"],
            "status": "published",
        },
    )["data"]
    return {
        "search": f"/hc/{ORG}/en/search?q={QUERY.replace(' ', '+')}",
        "question": f"/hc/{ORG}/en/questions/{question['slug']}",
    }


def measure(
    on: str, off: str, paths: dict[str, str], seconds: float, pids: dict[str, list[int]]
) -> dict[str, Any]:
    """Each page on both services, rounds alternating; median req/s and worst p99 of each, and
    the CPU seconds per 1,000 requests of each side's API process tree and of Redis (``pids``:
    ``on``, ``off``, ``redis``): a figure the other loads of a shared machine do not move."""
    out: dict[str, Any] = {}
    for page, path in paths.items():
        script = load.request_list_script([("GET", path, {}, None)])
        sides = [("on", on), ("off", off)]
        for _, base in sides:
            load.run_wrk(base, script, seconds=1)  # warm (the page cache too)
        runs: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
        cpu: dict[str, dict[str, float]] = {"on": {}, "off": {}}
        for n in range(ROUNDS):
            for name, base in sides if n % 2 == 0 else sides[::-1]:
                meter = Meter({"api": pids[name], "redis": pids["redis"]})
                before = meter.sample()
                res = load.run_wrk(base, script, seconds=max(1.0, seconds / ROUNDS))
                after = meter.sample()
                if res.errors:
                    raise RuntimeError(f"errors under load in the analytics row ({page}): {res}")
                runs[name].append(res.as_json())
                for group, used in per_thousand(before, after, 1000).items():
                    cpu[name][group] = cpu[name].get(group, 0.0) + used
        out[page] = {
            name: {
                "rps": statistics.median(r["rps"] for r in results),
                "p99_ms": max(r["p99_ms"] for r in results),
                "cpu_s_per_1k": {
                    group: round(used * 1000 / sum(r["requests"] for r in results), 3)
                    for group, used in cpu[name].items()
                },
            }
            for name, results in runs.items()
        }
        out[page]["runs"] = runs
    return out


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    entries = []
    for page, label in (("search", "search page"), ("question", "question page")):
        on, off = found[page]["on"]["rps"], found[page]["off"]["rps"]
        ratio = on / off if off else 0.0
        entries.append(
            {
                "name": f"analytics: help center {label} (req/s)",
                "measured_as": (
                    f"GET /hc/{{org}}/en/{PAGES[page]}"
                    f" with FAQ_CONTENT_ANALYTICS on vs off, {load.CONNECTIONS} conns, "
                    f"{ROUNDS} rounds alternating"
                ),
                "figure": on,
                "reference": off,
                "unit": "req/s",
                "target": f">= {TARGET}x with recording off",
                "met": ratio >= TARGET,
                "ratio": ratio,
                "p99_ms": {"on": found[page]["on"]["p99_ms"], "off": found[page]["off"]["p99_ms"]},
                # By side (``Bench.row`` prints a flat ``cpu_s_per_1k`` under the row).
                "cpu_s_per_1k_by_side": {
                    "on": found[page]["on"]["cpu_s_per_1k"],
                    "off": found[page]["off"]["cpu_s_per_1k"],
                },
            }
        )
    return entries


def _run(world: Any, seconds: float) -> dict[str, Any]:
    """Both sides fresh and alike: the content is made through a third, short-lived service
    (a service that made it, or served the rest of the bench, is not the same process)."""
    (record,) = seed.create_orgs([ORG], out_dir=world.tmp / "analytics-orgs", processes=1)
    maker = world.serve()
    try:
        paths = prepare(maker.base, record["key"])
    finally:
        maker.stop()
    on = world.serve()
    off = world.serve({"FAQ_CONTENT_ANALYTICS": "false"})
    try:
        pids = {"on": [on.proc.pid], "off": [off.proc.pid], "redis": [world.redis.process.pid]}
        return measure(on.base, off.base, paths, seconds, pids)
    finally:
        off.stop()
        on.stop()


def analytics_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``for entry in analytics_rows(self): self.row(**entry)``."""
    return rows(_run(bench.world, bench.seconds))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.analytics")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args(argv)
    found = in_world(lambda world: _run(world, args.seconds))
    for entry in rows(found):
        print(
            f"{entry['name']:<46} {entry['figure']:>9.1f} req/s  off {entry['reference']:>9.1f}"
            f"  ratio {entry['ratio']:.3f}  {entry['target']}"
            f"  {'MET' if entry['met'] else 'MISSED'}"
        )
        print(f"    CPU s/1k requests: {entry['cpu_s_per_1k_by_side']}")
    print({page: {k: v for k, v in found[page].items() if k != "runs"} for page in found})
    return 0


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
