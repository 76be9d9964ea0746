"""A list read in a translated locale beside the same read in the source locale (issue 15):
``GET /questions?locale=fr`` (every question has a published French translation, served in
its place) against ``GET /questions?locale=en`` (the questions' own fields), same org, same
run, response cache off. Target: the translated read's throughput >= 0.9x the source's.

    .venv/bin/python -m bench.translated_reads [--questions 10000] [--seconds 5]

Standalone it starts its own world (``bench.standalone``); from ``make bench``:
``translated_reads_rows(bench)`` uses the bench's world and its uncached server and returns
the row (``for entry in translated_reads_rows(self): self.row(**entry)``).

The org is made by the real provisioning code (``bench.seed``), then in its schema, in one
statement each: the questions (``bench.search_cost.questions_sql``), the locales ``en`` and
``fr`` enabled, and one published ``fr`` translation per question.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.http import ok
from bench.search_cost import questions_sql
from bench.services import World
from bench.standalone import in_world

ORG = "bench-translated"
QUESTIONS = 10_000
CONNECTIONS = 4
ROUNDS = 4  # source and translated alternate (ABBA…), so drift of the machine hits both alike
TARGET = 0.9
PAGES = ["", "&limit=50", "&limit=5", "&status=published"]


def translations_sql(schema: str) -> str:
    """One published French translation of every question of the org."""
    return (
        f'INSERT INTO "{schema}".question_translations (question_id, locale, title, answer, '
        "status, source_digest, search_vector, created_at, updated_at) "
        "SELECT id, 'fr', 'Comment ' || title, 'Réponse : ' || answer, 'published', "
        "md5(title || chr(1) || answer), search_vector, now(), now() "
        f'FROM "{schema}".questions'
    )


def locales_sql(org_id: str) -> str:
    return (
        "UPDATE shared.organizations SET locales = '{en,fr}', default_locale = 'en' "
        f"WHERE id = '{org_id}'"
    )


def _prepare(world: Any, record: dict[str, Any], count: int) -> None:
    schema = record["schema"]
    world.psql(locales_sql(record["id"]))
    world.psql(questions_sql(schema, count))
    world.psql(translations_sql(schema))
    world.psql(f'VACUUM ANALYZE "{schema}".questions')
    world.psql(f'VACUUM ANALYZE "{schema}".question_translations')


def _script(key: str, locale: str) -> str:
    headers = {"Authorization": f"Bearer {key}"}
    reqs = [
        ("GET", f"/api/v1/{ORG}/questions?locale={locale}{page}", headers, None) for page in PAGES
    ]
    return load.request_list_script(reqs)


def measure(base: str, key: str, seconds: float) -> dict[str, Any]:
    """Requests per second and p99 of the source-locale and translated list reads, in
    alternating rounds against a server whose response cache is off."""
    first = ok(base, "GET", f"/api/v1/{ORG}/questions?locale=fr", key)
    assert first["data"] and first["data"][0]["locale"] == "fr", "the translations are not served"
    scripts = {"source": _script(key, "en"), "translated": _script(key, "fr")}
    for script in scripts.values():
        load.run_wrk(base, script, seconds=1, connections=CONNECTIONS)  # warm
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in scripts}
    order = list(scripts.items())
    for n in range(ROUNDS):
        for name, script in order if n % 2 == 0 else order[::-1]:
            res = load.run_wrk(base, script, seconds=seconds / ROUNDS, connections=CONNECTIONS)
            if res.errors:
                raise RuntimeError(f"errors under load in the translated row ({name}): {res}")
            runs[name].append(res.as_json())
    out: dict[str, Any] = {"runs": runs}
    for name, results in runs.items():
        out[name] = {
            "rps": statistics.median(r["rps"] for r in results),  # robust to a noisy round
            "p99_ms": max(r["p99_ms"] for r in results),
        }
    return out


def rows(found: dict[str, Any], count: int) -> list[dict[str, Any]]:
    source, translated = found["source"]["rps"], found["translated"]["rps"]
    ratio = translated / source if source else 0.0
    return [
        {
            "name": f"translated list read ({count:,} q)",
            "measured_as": (
                f"GET /questions?locale=fr vs ?locale=en, req/s, no cache, {CONNECTIONS} conns"
            ),
            "figure": translated,
            "reference": source,
            "unit": "req/s",
            "target": f">= {TARGET}x source",
            "met": ratio >= TARGET,
            "ratio": ratio,
            "p99_ms": {
                "translated": found["translated"]["p99_ms"],
                "source": found["source"]["p99_ms"],
            },
        }
    ]


def translated_reads_rows(bench: Any, count: int = QUESTIONS) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``for entry in translated_reads_rows(self): self.row(**entry)``
    (``self.rows_of("translated_reads", "translated_reads_rows")``)."""
    (record,) = seed.create_orgs([ORG], out_dir=bench.world.tmp / "orgs", processes=1)
    _prepare(bench.world, record, count)
    return rows(measure(bench.uncached.base, record["key"], bench.seconds), count)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.translated_reads")
    parser.add_argument("--questions", type=int, default=QUESTIONS)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)

    def work(world: World) -> dict[str, Any]:
        (record,) = seed.create_orgs([ORG], out_dir=world.tmp / "orgs", processes=1)
        _prepare(world, record, args.questions)
        server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        return measure(server.base, record["key"], args.seconds)

    found = in_world(work)
    for entry in rows(found, args.questions):
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
