"""The evaluation over HTTP: the FAQ loaded into an org through the API (categories, then
published questions), ``GET /answers`` and today's ``GET /questions?q=`` asked every question,
beside the offline baselines of the same run (``bench.answers_quality``).

``answers_quality_rows(bench)`` is the ``make bench`` row (``answers``); ``standalone`` is
``python -m bench.answers_quality --serve``."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any

from bench.answers_quality import (
    TARGET_ANSWERABLE_CONFIDENT_RIGHT,
    TARGET_MRR_AT_5,
    TARGET_P_AT_1,
    TARGET_TYPO_DROP,
    TARGET_UNANSWERABLE_NOT_CONFIDENT,
    EvalSet,
    Metrics,
    Rank,
    Ranked,
    baseline_metrics,
    evaluate,
    faq_entries,
    load_set,
    print_table,
)
from bench.http import call, ok

ORG = "bench-answers"
CONCURRENCY = 4
SHORT_NAMES = {
    "today's /questions?q=": "today's ?q=",
    "BM25 (title+answer)": "BM25",
    "WordLlama cosine (titles)": "WordLlama titles",
    "naive RRF (BM25+WordLlama)": "naive RRF",
}
QUICK_LIMIT = 80  # answerable test questions in quick mode (and a proportional unanswerable share)


def seed(base_url: str, org: str, key: str) -> dict[str, str]:
    """Load the FAQ into ``org`` through the HTTP API (an admin or write ``key``): one category
    per entry category, every entry a published question. Returns question id -> entry id."""
    entries = faq_entries()
    categories: dict[str, str] = {}
    for name in sorted({e.category for e in entries}):
        made = ok(base_url, "POST", f"/api/v1/{org}/categories", key, {"name": name})
        categories[name] = made["data"]["id"]
    entry_of: dict[str, str] = {}
    for e in entries:
        body = {
            "title": e.title,
            "answer": e.answer,
            "categoryId": categories[e.category],
            "status": "published",
        }
        made = ok(base_url, "POST", f"/api/v1/{org}/questions", key, body)
        entry_of[made["data"]["id"]] = e.id
    return entry_of


def _get(base_url: str, path: str, key: str) -> Any:
    status, raw = call(base_url, "GET", path, key)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {raw[:300]!r}")
    return json.loads(raw)


def answers_rank(base_url: str, org: str, key: str, entry_of: dict[str, str]) -> Rank:
    """``GET /api/v1/{org}/answers?q=&limit=5`` as a ``Rank``."""

    async def rank(text: str) -> Ranked:
        path = f"/api/v1/{org}/answers?" + urllib.parse.urlencode({"q": text, "limit": 5})
        body = await asyncio.to_thread(_get, base_url, path, key)
        return [
            (entry_of.get(item["question"]["id"], "?"), float(item["score"]), item["confident"])
            for item in body["data"]
        ]

    return rank


def list_search_rank(base_url: str, org: str, key: str, entry_of: dict[str, str]) -> Rank:
    """Today's list search, ``GET /questions?q=&limit=5`` (every word must prefix-match), as a
    ``Rank``: never confident, score 1/rank."""

    async def rank(text: str) -> Ranked:
        path = f"/api/v1/{org}/questions?" + urllib.parse.urlencode({"q": text, "limit": 5})
        body = await asyncio.to_thread(_get, base_url, path, key)
        return [
            (entry_of.get(item["id"], "?"), 1.0 / n, False)
            for n, item in enumerate(body["data"], 1)
        ]

    return rank


def measure(
    base_url: str, org: str, key: str, questions: EvalSet, entry_of: dict[str, str]
) -> dict[str, Metrics]:
    """/answers and the list search over HTTP, then the offline baselines on the same set."""

    async def run() -> dict[str, Metrics]:
        out = {}
        out["/answers"] = await evaluate(
            answers_rank(base_url, org, key, entry_of), questions, CONCURRENCY
        )
        out["today's /questions?q="] = await evaluate(
            list_search_rank(base_url, org, key, entry_of), questions, CONCURRENCY
        )
        return out

    results = asyncio.run(run())
    results.update(asyncio.run(baseline_metrics(questions)))
    return results


def rows(results: dict[str, Metrics], questions: EvalSet) -> list[dict[str, Any]]:
    """The ``make bench`` rows: /answers against each target, the best baseline as reference."""
    mine = results["/answers"]
    ref = results["WordLlama cosine (titles)"]
    sizes = (
        f"StackFAQ test, {len(questions.answerable)} questions"
        f" + {len(questions.unanswerable)} unanswerable"
    )
    table = {name: m.as_json() for name, m in results.items()}
    out = [
        {
            "name": "answers P@1",
            "measured_as": f"GET /answers, {sizes}; ref: WordLlama title cosine",
            "figure": mine.p_at_1,
            "reference": ref.p_at_1,
            "unit": "share",
            "target": f">= {TARGET_P_AT_1}",
            "met": mine.p_at_1 >= TARGET_P_AT_1,
            "methods": table,
        },
        {
            "name": "answers MRR@5",
            "measured_as": "same run",
            "figure": mine.mrr_at_5,
            "reference": ref.mrr_at_5,
            "unit": "share",
            "target": f">= {TARGET_MRR_AT_5}",
            "met": mine.mrr_at_5 >= TARGET_MRR_AT_5,
        },
        {
            "name": "answers typo P@1 drop",
            "measured_as": "one typo in every word of 5+ letters, relative P@1 drop",
            "figure": mine.typo_drop,
            "reference": ref.typo_drop,
            "unit": "share",
            "target": f"<= {TARGET_TYPO_DROP}",
            "met": mine.typo_drop <= TARGET_TYPO_DROP,
        },
        {
            "name": "answers unanswerable not confident",
            "measured_as": "questions of held-out entries: no item or confident false",
            "figure": mine.unanswerable_not_confident,
            "reference": ref.unanswerable_not_confident,
            "unit": "share",
            "target": f">= {TARGET_UNANSWERABLE_NOT_CONFIDENT}",
            "met": mine.unanswerable_not_confident >= TARGET_UNANSWERABLE_NOT_CONFIDENT,
        },
        {
            "name": "answers confident and right",
            "measured_as": "answerable: first item confident and right",
            "figure": mine.answerable_confident_right,
            "reference": ref.answerable_confident_right,
            "unit": "share",
            "target": f">= {TARGET_ANSWERABLE_CONFIDENT_RIGHT}",
            "met": mine.answerable_confident_right >= TARGET_ANSWERABLE_CONFIDENT_RIGHT,
        },
    ]
    for name, short in SHORT_NAMES.items():
        m = results[name]
        out.append(
            {
                "name": f"answers P@1 vs {short}",
                "measured_as": (
                    f"same questions; {short}: MRR@5 {m.mrr_at_5:.3f}, typo P@1 "
                    f"{m.typo_p_at_1:.3f}, conf+right {m.answerable_confident_right:.3f}"
                ),
                "figure": mine.p_at_1,
                "reference": m.p_at_1,
                "unit": "share",
                "target": "info",
                "met": None,
            }
        )
    return out


def _load_and_embed(world: Any, base_url: str) -> tuple[str, dict[str, str]]:
    from bench import seed as orgs

    (record,) = orgs.create_orgs([ORG], out_dir=world.tmp / "orgs", processes=1)
    entry_of = seed(base_url, ORG, record["key"])
    done = world.run("embeddings", "backfill", ORG)
    print(f"faq embeddings backfill {ORG}: {done.stdout.strip()} {done.stderr.strip()[-300:]}")
    return record["key"], entry_of


def answers_quality_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: the test split (a fixed subset in quick mode), /answers on
    the bench's server with the response cache off."""
    questions = load_set("test", QUICK_LIMIT if bench.quick else None)
    key, entry_of = _load_and_embed(bench.world, bench.uncached.base)
    results = measure(bench.uncached.base, ORG, key, questions, entry_of)
    print_table(results, "answers quality (StackFAQ test split)")
    return rows(results, questions)


def standalone(split: str, limit: int | None) -> dict[str, Metrics]:
    from bench.standalone import in_world

    questions = load_set(split, limit)

    def work(world: Any) -> dict[str, Metrics]:
        server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        key, entry_of = _load_and_embed(world, server.base)
        return measure(server.base, ORG, key, questions, entry_of)

    return in_world(work)
