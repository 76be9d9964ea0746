"""The cost of a one-letter search: ``GET /questions?q=<one letter>`` over an org of 50,000
questions, p99 under load, beside the plain list of the same org in the same run.

    .venv/bin/python -m bench.search_cost [--questions 50000] [--seconds 5]

Standalone it starts its own embedded PostgreSQL and Redis (``bench.services.World``), runs
``faq migrate``, creates one org through the real provisioning code (``bench.seed``), adds the
questions in one ``INSERT … SELECT generate_series`` in the org's schema (titles and answers
from a small vocabulary, so one letter matches nearly every question and ranks differ), and
serves the app with the response cache off (every request reaches PostgreSQL: what an
attacker varying ``q`` gets). From ``make bench``: ``search_cost_rows(bench)`` does the same on
the bench's world and its uncached server, and returns the rows.

Load: wrk from 127.0.0.1, ``CONNECTIONS`` connections, bounded by ``--seconds``; the one-letter
requests walk ``a``..``z`` (the letters that start no word match nothing and are cheap; the
figure is the p99 over all of them, and ``worst_letter`` is measured alone too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.http import ok
from bench.services import World
from bench.standalone import in_world, report

ORG = "bench-search"
QUESTIONS = 50_000
CONNECTIONS = 4  # a handful of clients: the figure is the query's cost, not queueing
TARGET_MS = 100.0  # one-letter p99 stays under this (and within a small multiple of the list)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORST = "h"  # "how": the first word of every title

_VERBS = ["reset", "change", "export", "delete", "share", "rename", "restore", "verify"]
_NOUNS = ["password", "invoice", "account", "profile", "report", "webhook", "team", "domain"]


def _array(words: list[str]) -> str:
    return "ARRAY[" + ", ".join(f"'{w}'" for w in words) + "]"


def questions_sql(schema: str, count: int) -> str:
    """``count`` published questions in the org's default category, in one statement. The
    search vector is built as the service builds it: title words weight A, answer words B."""
    title = (
        f"'How do I ' || ({_array(_VERBS)})[1 + i % {len(_VERBS)}] || ' my ' || "
        f"({_array(_NOUNS)})[1 + (i / {len(_VERBS)}) % {len(_NOUNS)}] || ' ' || i || '?'"
    )
    return (
        f'INSERT INTO "{schema}".questions (id, slug, title, answer, status, category_id, '
        "sort_order, published_at, search_vector, revision_count, created_at, updated_at) "
        "SELECT 'q_SEARCH' || lpad(i::text, 18, '0'), 'search-question-' || i, t.title, "
        f"'{seed.ANSWER}', 'published', c.id, i, now(), "
        "setweight(to_tsvector('simple', lower(t.title)), 'A') || "
        f"setweight(to_tsvector('simple', lower('{seed.ANSWER}')), 'B'), 0, now(), now() "
        f"FROM generate_series(1, {count}) AS i, "
        f"LATERAL (SELECT {title} AS title) AS t, "
        f'(SELECT id FROM "{schema}".categories WHERE is_default) AS c'
    )


def _get_script(slug: str, key: str, queries: list[str]) -> str:
    headers = {"Authorization": f"Bearer {key}"}
    reqs = [("GET", f"/api/v1/{slug}/questions{q}", headers, None) for q in queries]
    return load.request_list_script(reqs)


def measure(base: str, slug: str, key: str, seconds: float) -> dict[str, Any]:
    """p99 of the plain list, of one-letter searches (a..z), of the worst letter alone and of
    a selective word, each run back to back against a server whose response cache is off."""
    runs = {
        "list": [""],
        "one_letter": [f"?q={c}" for c in LETTERS],
        "worst_letter": [f"?q={WORST}"],
        "word": ["?q=invoice"],
    }
    out: dict[str, Any] = {}
    for name, queries in runs.items():
        script = _get_script(slug, key, queries)
        load.run_wrk(base, script, seconds=1, connections=CONNECTIONS)  # warm
        res = load.run_wrk(base, script, seconds=seconds, connections=CONNECTIONS)
        if res.errors:
            raise RuntimeError(f"errors under load in the search row ({name}): {res.errors}")
        out[name] = res.as_json()
    return out


def rows(found: dict[str, Any], count: int) -> list[dict[str, Any]]:
    one, worst, plain = found["one_letter"], found["worst_letter"], found["list"]
    return [
        {
            "name": f"one-letter q p99 ({count:,} questions)",
            "measured_as": f"GET /questions?q=a..z, no cache, {CONNECTIONS} conns; ref: plain list",
            "figure": one["p99_ms"],
            "reference": plain["p99_ms"],
            "unit": "ms",
            "target": f"< {TARGET_MS:.0f} ms",
            "met": one["p99_ms"] < TARGET_MS,
            "runs": found,
        },
        {
            "name": f"q={WORST} p99 ({count:,} questions)",
            "measured_as": "a letter every title starts a word with; ref: plain list",
            "figure": worst["p99_ms"],
            "reference": plain["p99_ms"],
            "unit": "ms",
            "target": f"< {TARGET_MS:.0f} ms",
            "met": worst["p99_ms"] < TARGET_MS,
        },
    ]


def _add_questions(world: Any, schema: str, count: int) -> None:
    world.psql(questions_sql(schema, count))
    world.psql(f'VACUUM ANALYZE "{schema}".questions')


def search_cost_rows(bench: Any, count: int = QUESTIONS) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``for entry in search_cost_rows(self): self.row(**entry)``.
    Uses the bench's world and its server with the response cache off (``bench.uncached``)."""
    (record,) = seed.create_orgs([ORG], out_dir=bench.world.tmp / "orgs", processes=1)
    _add_questions(bench.world, record["schema"], count)
    found = measure(bench.uncached.base, ORG, record["key"], bench.seconds)
    return rows(found, count)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_cost")
    parser.add_argument("--questions", type=int, default=QUESTIONS)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)

    def work(world: World) -> dict[str, Any]:
        (record,) = seed.create_orgs([ORG], out_dir=world.tmp / "orgs", processes=1)
        _add_questions(world, record["schema"], args.questions)
        server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        first = ok(server.base, "GET", f"/api/v1/{ORG}/questions?q={WORST}", record["key"])
        assert first["data"], "the worst letter matches nothing: the seed is wrong"
        return measure(server.base, ORG, record["key"], args.seconds)

    found = in_world(work)
    return report(rows(found, args.questions), found, width=36)


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
