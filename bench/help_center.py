"""The help center's row (issue 16): a question page (``GET /hc/{org}/en/questions/{slug}``,
served from the page cache, with the per-visitor feedback form rendered into it and the view
counted) against a bare Quart + Hypercorn route serving the very same bytes from memory
(``bench.reference_app``), same run, wrk with ``load.CONNECTIONS`` connections, rounds
alternating (ABBA…) so drift of the machine hits both alike. Target: the page's throughput
>= 0.5x the bare route's, and the page (HTML and its stylesheet) under 60 KB.

    .venv/bin/python -m bench.help_center [--seconds 4]

From ``make bench``: ``help_center_rows(bench)`` uses the bench's world and its cached server
(``bench.base``) and returns the row (``for entry in help_center_rows(self):
self.row(**entry)``); it starts its own reference process and stops it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import urllib.request
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.http import ok
from bench.standalone import in_world

ORG = "bench-helpcenter"
ROUNDS = 4
TARGET = 0.5
MAX_BYTES = 60_000
ANSWER = (
    "To rotate a key, open **Settings → API keys** and choose *Create key*.\n\n"
    "1. Give the new key a name and the scopes it needs.\n"
    "2. Deploy it where the old one was used.\n"
    "3. Revoke the old key: it stops working within a second everywhere.\n\n"
    "| Scope | Reads | Writes |\n|---|---|---|\n| read | yes | no |\n| write | yes | yes |\n\n"
    "See [the API reference](https://example.com/docs) or write to "
    "[support](mailto:support@example.com). `faq keys create` does the same from a shell.\n"
)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        body: bytes = r.read()
        return body


def prepare(base: str, key: str) -> str:
    """Turn the help center on, make a category and a published question; the page's path."""
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
    return f"/hc/{ORG}/en/questions/{question['slug']}"


def page_bytes(base: str, path: str) -> tuple[bytes, int]:
    """The page's exact bytes, and its weight with its stylesheet."""
    page = _get(base + path)
    start = page.index(b'<link rel="stylesheet" href="') + len(b'<link rel="stylesheet" href="')
    css = _get(base + page[start : page.index(b'"', start)].decode().replace("&amp;", "&"))
    return page, len(page) + len(css)


def measure(world: Any, base: str, path: str, seconds: float) -> dict[str, Any]:
    body, weight = page_bytes(base, path)
    bodies = world.tmp / "hc-bodies"
    bodies.mkdir(exist_ok=True)
    (bodies / "hc-question.json").write_bytes(body)
    reference = world.reference(bodies)
    try:
        scripts = {
            "bare": (
                reference.base,
                load.request_list_script([("GET", "/r/hc-question", {}, None)]),
            ),
            "page": (base, load.request_list_script([("GET", path, {}, None)])),
        }
        for target, script in scripts.values():
            load.run_wrk(target, script, seconds=1)  # warm
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in scripts}
        order = list(scripts.items())
        for n in range(ROUNDS):
            for name, (target, script) in order if n % 2 == 0 else order[::-1]:
                res = load.run_wrk(target, script, seconds=seconds / ROUNDS)
                if res.errors:
                    raise RuntimeError(f"errors under load in the help center row ({name}): {res}")
                runs[name].append(res.as_json())
    finally:
        reference.stop()
    out: dict[str, Any] = {"runs": runs, "page_bytes": len(body), "weight_bytes": weight}
    for name, results in runs.items():
        out[name] = {
            "rps": statistics.median(r["rps"] for r in results),
            "p99_ms": max(r["p99_ms"] for r in results),
        }
    return out


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    page, bare = found["page"]["rps"], found["bare"]["rps"]
    ratio = page / bare if bare else 0.0
    return [
        {
            "name": "help center question page (req/s)",
            "measured_as": (
                f"GET /hc/{{org}}/en/questions/{{slug}} (cached page + feedback form) vs a bare "
                f"route serving the same bytes, {load.CONNECTIONS} conns; page+CSS "
                f"{found['weight_bytes']:,} bytes"
            ),
            "figure": page,
            "reference": bare,
            "unit": "req/s",
            "target": f">= {TARGET}x bare; page < 60 KB",
            "met": ratio >= TARGET and found["weight_bytes"] < MAX_BYTES,
            "ratio": ratio,
            "p99_ms": {"page": found["page"]["p99_ms"], "bare": found["bare"]["p99_ms"]},
        }
    ]


def help_center_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``for entry in help_center_rows(self): self.row(**entry)``."""
    (record,) = seed.create_orgs([ORG], out_dir=bench.world.tmp / "orgs", processes=1)
    path = prepare(bench.base, record["key"])
    return rows(measure(bench.world, bench.base, path, bench.seconds))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.help_center")
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args(argv)

    def work(world: Any) -> dict[str, Any]:
        (record,) = seed.create_orgs([ORG], out_dir=world.tmp / "orgs", processes=1)
        server = world.serve()
        path = prepare(server.base, record["key"])
        return measure(world, server.base, path, args.seconds)

    found = in_world(work)
    for entry in rows(found):
        print(
            f"{entry['name']:<36} {entry['figure']:>9.1f} req/s  ref {entry['reference']:>9.1f}"
            f"  ratio {entry['ratio']:.3f}  {entry['target']}"
            f"  {'MET' if entry['met'] else 'MISSED'}"
        )
    print(found)
    return 0


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
