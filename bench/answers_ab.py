"""``/answers`` p50 and p95 of several commits in one run (issue 38): one world, one seeded
org (``bench.answers_speed``'s, vectors written by this checkout's backfill), one uncached
server per git worktree, and every query asked of each server in turn (the order reversed on
every other query), so the machine's noise falls on all of them alike.

    git worktree add --detach /tmp/before <commit>
    .venv/bin/python -m bench.answers_ab --questions 100000 before=/tmp/before now=.

The worktrees must share this checkout's migrations (the world is migrated by this one). The
list search ``?q=`` of the last server is timed beside them, query by query, as a reference.
A study, not a ``make bench`` row: each run seeds its own world (at 100,000 questions the
backfill of both models takes about 20 minutes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.answers_quality import load_set
from bench.answers_speed import ORG, QUICK_QUESTIONS, _p95, _timed_gets, seed_org

WARM = 20  # queries asked of each server before timing (models and vocabulary loaded)


def measure(world: Any, key: str, trees: dict[str, Path], requests: int) -> dict[str, Any]:
    uncached = {"FAQ_RESPONSE_CACHE_MB": "0"}
    servers = {name: world.serve(uncached, tree) for name, tree in trees.items()}
    asked = load_set("all")
    queries = [q.text for q in [*asked.answerable, *asked.unanswerable]][: requests + WARM]
    answers = [f"/api/v1/{ORG}/answers?q={quote(q)}&limit=5&locale=en" for q in queries]
    listed = [f"/api/v1/{ORG}/questions?q={quote(q)}&limit=5" for q in queries]
    for server in servers.values():
        _timed_gets(server.base, key, answers[:WARM])
    names = list(servers)
    timings: dict[str, list[float]] = {name: [] for name in [*names, "list_search"]}
    for n, path in enumerate(answers[WARM:]):
        for name in names if n % 2 == 0 else names[::-1]:
            timings[name] += _timed_gets(servers[name].base, key, [path])
        timings["list_search"] += _timed_gets(servers[names[-1]].base, key, [listed[WARM + n]])
    return {
        name: {
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(_p95(values), 2),
            "requests": len(values),
        }
        for name, values in timings.items()
    }


def main(argv: list[str]) -> int:
    from bench.standalone import in_world

    parser = argparse.ArgumentParser(prog="python -m bench.answers_ab")
    parser.add_argument("--questions", type=int, default=QUICK_QUESTIONS)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("trees", nargs="+", help="name=path of a git worktree, two or more")
    args = parser.parse_args(argv)
    trees = {}
    for item in args.trees:
        name, _, path = item.partition("=")
        trees[name] = Path(path).resolve()

    def work(world: Any) -> dict[str, Any]:
        record, backfill_s = seed_org(world, args.questions, ("en", "fr"))
        found = measure(world, record["key"], trees, args.requests)
        return {"questions": args.questions, "backfill_s": round(backfill_s, 1), **found}

    print(json.dumps(in_world(work), indent=1))
    return 0


if __name__ == "__main__":  # ``python -m bench.answers_ab``: its imports need the root on the path
    sys.exit(main(sys.argv[1:]))
