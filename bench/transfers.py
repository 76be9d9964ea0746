"""Imports and exports at size (issue 29): 10,000 Zendesk articles of about 5 KB imported
with ``faq import`` (the code of ``POST /imports`` and of the ``imports.run`` actor, in one
process) within 60 s, that process's peak RSS flat (the same at a fifth of the articles), a
10,000-question export (``faq export``) within 30 s, and readers of another org (its API's
``GET /questions`` and a help-center page, under ``wrk``) whose p99 while the same import runs
into a third org is within 1.5x of their p99 alone, both measured in the same run.

    .venv/bin/python -m bench.transfers [--articles 10000]

Standalone it starts its own world (``bench.standalone``); from ``make bench``:
``transfer_rows(bench)`` uses the bench's world and returns the rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.http import ok
from bench.services import BIN, ROOT, World
from bench.standalone import in_world

ORG = "bench-import"
SMALL_ORG = "bench-import-small"
BUSY_ORG = "bench-import-busy"  # the import the readers run beside
READER_ORG = "bench-import-reader"
READER_QUESTIONS = 1_000
READER_SECONDS = 15.0  # each reader run (alone, then beside the import); quick: 5
READER_P99 = 1.5  # p99 beside the import / alone, at most
ARTICLES = 10_000
SECTIONS = 50
IMPORT_SECONDS = 60.0  # per 10,000 articles
EXPORT_SECONDS = 30.0  # per 10,000 questions
RSS_FLAT = 1.25  # peak RSS at full size / at a fifth of it, at most

PARAGRAPH = (
    "<p>To change the card we charge, open <strong>Billing</strong> &rarr; <em>Payment "
    'methods</em> and click <a href="https://acme.test/billing">Replace</a>. Invoices '
    "already issued keep the previous card&nbsp;&mdash; only the next one uses the new card. "
    "Prices include VAT where it applies (&euro;, &pound; and $ are supported).</p>"
)
TABLE = (
    "<table><thead><tr><th>Plan</th><th>Seats</th><th>Price</th></tr></thead><tbody>"
    + "".join(
        f"<tr><td>Plan {n}</td><td>{n * 5}</td><td>{n * 9}&nbsp;&euro;</td></tr>"
        for n in range(1, 6)
    )
    + "</tbody></table>"
)
CODE = "<pre><code>curl -H 'Authorization: Bearer KEY' https://api.acme.test/v1/cards</code></pre>"


def article_body(n: int) -> str:
    """About 5 KB of HTML: paragraphs, a list, a table, code and an image."""
    items = "".join(f"<li>Step {i} of article {n}</li>" for i in range(1, 6))
    image = f'<p><img src="https://acme.test/img/{n}.png" alt="Screenshot {n}"></p>'
    return (PARAGRAPH * 8) + f"<ol>{items}</ol>" + TABLE + CODE + image + (PARAGRAPH * 4)


def write_export(path: Path, articles: int) -> int:
    """A Zendesk export of ``articles`` articles in ``SECTIONS`` sections, written as it goes."""
    with path.open("w") as out:
        out.write('{"categories": [')
        out.write(json.dumps({"id": 1, "name": "Help", "position": 0, "locale": "en-us"}))
        out.write('], "sections": [')
        out.write(
            ",".join(
                json.dumps({"id": 100 + s, "category_id": 1, "name": f"Section {s}", "position": s})
                for s in range(SECTIONS)
            )
        )
        out.write('], "articles": [')
        for n in range(articles):
            if n:
                out.write(",")
            out.write(
                json.dumps(
                    {
                        "id": 360_000_000 + n,
                        "title": f"How do I change the card of invoice {n}?",
                        "body": article_body(n),
                        "draft": n % 10 == 0,
                        "position": n,
                        "section_id": 100 + n % SECTIONS,
                        "locale": "en-us",
                        "source_locale": "en-us",
                        "label_names": ["billing"],
                    }
                )
            )
        out.write("]}")
    return path.stat().st_size


def rss_kb(pid: int) -> int:
    """The RSS (kB) of ``pid`` and of its children (the converter processes of an import,
    multiprocessing's resource tracker), whichever of its threads started them (``/proc``
    lists a child under the thread that made it)."""
    total = 0
    pids = [pid]
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with suppress(OSError, ValueError):
            pids += [int(p) for p in children.read_text().split()]
    for each in pids:
        with suppress(OSError, ValueError):
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def timed(world: World, *args: str) -> tuple[float, int, str]:
    """``faq *args`` in its own process: seconds, peak RSS of it and its children (kB,
    sampled every 50 ms), stdout."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(BIN / "faq"), *args],
        env=world.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    peak = 0
    while proc.poll() is None:
        peak = max(peak, rss_kb(proc.pid))
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    out = proc.stdout.read().decode() if proc.stdout else ""
    if proc.returncode not in (0, 2):
        raise RuntimeError(f"faq {' '.join(args)} exited {proc.returncode}: {out[-2000:]}")
    return elapsed, peak, out


def reader_script(base: str, key: str) -> str:
    """Another org's readers: its API list (``GET /questions?limit=20``) and a help-center
    question page, alternately."""
    ok(base, "PATCH", f"/api/v1/{READER_ORG}/settings", key, {"helpCenter": {"enabled": True}})
    auth = {"Authorization": f"Bearer {key}"}
    requests: list[tuple[str, str, dict[str, str], str | None]] = []
    for n in range(1, 21):
        requests.append(("GET", f"/api/v1/{READER_ORG}/questions?limit=20", auth, None))
        slug = f"how-do-i-reset-my-password-{n * 37}"
        requests.append(("GET", f"/hc/{READER_ORG}/en/questions/{slug}", {}, None))
    return load.request_list_script(requests)


def measure_readers(world: World, big_file: Path, seconds: float) -> dict[str, Any]:
    """The readers' p99 alone, then while ``faq import`` of ``big_file`` runs (started a
    second before the readers, so they meet it converting and writing)."""
    (reader,) = seed.create_orgs(
        [READER_ORG], out_dir=world.tmp / "orgs", processes=1, questions_each=READER_QUESTIONS
    )
    server = world.serve()
    try:
        script = reader_script(server.base, reader["key"])
        load.run_wrk(server.base, script, seconds=3)  # warm: caches, connections
        alone = load.run_wrk(server.base, script, seconds=seconds)
        importing = subprocess.Popen(
            [str(BIN / "faq"), "import", BUSY_ORG, str(big_file), "--format", "zendesk"],
            env=world.env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1.0)
            beside = load.run_wrk(server.base, script, seconds=seconds)
            outlasted = importing.poll() is None  # the import ran for the whole reader run
        finally:
            with suppress(subprocess.TimeoutExpired):
                importing.wait(600)
            if importing.poll() is None:
                importing.kill()
    finally:
        server.stop()
    return {
        "readers_alone": alone.as_json(),
        "readers_beside_import": beside.as_json(),
        "import_outlasted_readers": outlasted,
    }


def measure(world: World, articles: int, reader_seconds: float = READER_SECONDS) -> dict[str, Any]:
    records = seed.create_orgs([ORG, SMALL_ORG, BUSY_ORG], out_dir=world.tmp / "orgs", processes=1)
    for record in records:
        world.run("orgs", "set-plan", record["slug"], "ENTERPRISE")
    small_file, big_file = world.tmp / "zendesk-small.json", world.tmp / "zendesk.json"
    write_export(small_file, articles // 5)
    size = write_export(big_file, articles)
    small_s, small_rss, _ = timed(
        world, "import", SMALL_ORG, str(small_file), "--format", "zendesk"
    )
    big_s, big_rss, out = timed(world, "import", ORG, str(big_file), "--format", "zendesk")
    report = json.loads(out)
    bundle = world.tmp / "bundle.zip"
    export_s, export_rss, _ = timed(world, "export", ORG, str(bundle))
    readers = measure_readers(world, big_file, reader_seconds)
    return {
        **readers,
        "articles": articles,
        "upload_bytes": size,
        "import_seconds": big_s,
        "import_counts": report["counts"],
        "import_peak_rss_kb": big_rss,
        "small_import_seconds": small_s,
        "small_import_peak_rss_kb": small_rss,
        "export_seconds": export_s,
        "export_peak_rss_kb": export_rss,
        "bundle_bytes": bundle.stat().st_size,
    }


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    n = found["articles"]
    import_target = IMPORT_SECONDS * n / ARTICLES
    export_target = EXPORT_SECONDS * n / ARTICLES
    rss_ratio = found["import_peak_rss_kb"] / max(1, found["small_import_peak_rss_kb"])
    return [
        {
            "name": f"zendesk import ({n:,} x 5 KB)",
            "measured_as": "faq import --format zendesk, wall seconds (parse, convert, write)",
            "figure": found["import_seconds"],
            "reference": import_target,
            "unit": "s",
            "target": f"<= {import_target:.0f} s",
            "met": found["import_seconds"] <= import_target,
            "counts": found["import_counts"],
            "upload_bytes": found["upload_bytes"],
        },
        {
            "name": "import peak RSS (flat)",
            "measured_as": (
                f"peak RSS of faq import and its converters: {n:,} articles vs {n // 5:,}"
            ),
            "figure": found["import_peak_rss_kb"] / 1024,
            "reference": found["small_import_peak_rss_kb"] / 1024,
            "unit": "MB",
            "target": f"<= {RSS_FLAT}x",
            "met": rss_ratio <= RSS_FLAT,
            "ratio": rss_ratio,
        },
        {
            "name": f"export ({n:,} q)",
            "measured_as": "faq export, wall seconds (zip of NDJSON, stored, written out)",
            "figure": found["export_seconds"],
            "reference": export_target,
            "unit": "s",
            "target": f"<= {export_target:.0f} s",
            "met": found["export_seconds"] <= export_target,
            "peak_rss_mb": round(found["export_peak_rss_kb"] / 1024, 1),
            "bundle_bytes": found["bundle_bytes"],
        },
        reader_row(found),
    ]


def reader_row(found: dict[str, Any]) -> dict[str, Any]:
    alone, beside = found["readers_alone"], found["readers_beside_import"]
    ratio = beside["p99_ms"] / max(0.001, alone["p99_ms"])
    return {
        "name": "other org's readers p99 beside import",
        "measured_as": (
            "wrk: GET /questions?limit=20 and a help-center page of another org, p99 while"
            f" faq import of {found['articles']:,} articles runs into a third org vs alone"
        ),
        "figure": beside["p99_ms"],
        "reference": alone["p99_ms"],
        "unit": "ms",
        "target": f"<= {READER_P99}x",
        "met": ratio <= READER_P99
        and found["import_outlasted_readers"]
        and beside["errors"] == alone["errors"] == 0,
        "ratio": ratio,
        "alone": alone,
        "beside_import": beside,
        "import_outlasted_readers": found["import_outlasted_readers"],
    }


def transfer_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py`` (``self.rows_of("transfers", "transfer_rows")``); quick
    mode imports a fifth of the articles, against targets scaled alike."""
    if bench.quick:
        return rows(measure(bench.world, ARTICLES // 5, READER_SECONDS / 3))
    return rows(measure(bench.world, ARTICLES))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.transfers")
    parser.add_argument("--articles", type=int, default=ARTICLES)
    parser.add_argument("--reader-seconds", type=float, default=READER_SECONDS)
    args = parser.parse_args(argv)
    found = in_world(lambda world: measure(world, args.articles, args.reader_seconds))
    for entry in rows(found):
        print(
            f"{entry['name']:<34} {entry['figure']:>9.1f} {entry['unit']:<3} {entry['target']}"
            f"  {'MET' if entry['met'] else 'MISSED'}"
        )
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
