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
    SUPPORT_FAQ,
    TARGET_ANSWERABLE_CONFIDENT_RIGHT,
    TARGET_MRR_AT_5,
    TARGET_P_AT_1,
    TARGET_SUPPORT_P_AT_1,
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
    load_support_set,
    print_table,
)
from bench.http import call, ok

ORG = "bench-answers"
SUPPORT_ORG = "bench-answers-support"
CONCURRENCY = 4
SHORT_NAMES = {
    "today's /questions?q=": "today's ?q=",
    "BM25 (title+answer)": "BM25",
    "WordLlama cosine (titles)": "WordLlama titles",
    "naive RRF (BM25+WordLlama)": "naive RRF",
}
QUICK_LIMIT = 80  # answerable test questions in quick mode (and a proportional unanswerable share)


def seed(base_url: str, org: str, key: str, faq: str = "faq.json") -> dict[str, str]:
    """Load the FAQ into ``org`` through the HTTP API (an admin or write ``key``): one category
    per entry category, every entry a published question. Returns question id -> entry id."""
    entries = faq_entries(faq)
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


def _load_and_embed(
    world: Any, base_url: str, org: str = ORG, faq: str = "faq.json"
) -> tuple[str, dict[str, str]]:
    from bench import seed as orgs

    (record,) = orgs.create_orgs([org], out_dir=world.tmp / "orgs", processes=1)
    entry_of = seed(base_url, org, record["key"], faq)
    done = world.run("embeddings", "backfill", org)
    print(f"faq embeddings backfill {org}: {done.stdout.strip()} {done.stderr.strip()[-300:]}")
    return record["key"], entry_of


def _lexicon_off(base_url: str, org: str, key: str, off: bool) -> None:
    """Every group of the support lexicon off (``off``), or on again, in the org's locale."""
    _status, raw = call(base_url, "GET", f"/api/v1/{org}/synonyms/lexicon", key)
    groups = [g["id"] for g in json.loads(raw)["data"]["groups"]] if off else []
    ok(base_url, "PUT", f"/api/v1/{org}/synonyms/lexicon", key, {"disabled": groups})


def measure_support(
    base_url: str, org: str, key: str, entry_of: dict[str, str]
) -> dict[str, Metrics]:
    """The support-phrasing set (no synonym of the org's own): /answers with the support
    lexicon on, then with every group off (before the lexicon), then the offline baselines
    (thresholds calibrated on the set's dev half)."""
    questions = load_support_set()
    rank = answers_rank(base_url, org, key, entry_of)
    out = {"/answers": asyncio.run(evaluate(rank, questions, CONCURRENCY))}
    _lexicon_off(base_url, org, key, True)
    try:
        out["/answers, lexicon off"] = asyncio.run(evaluate(rank, questions, CONCURRENCY))
    finally:
        _lexicon_off(base_url, org, key, False)
    dev = load_support_set("dev")
    out.update(asyncio.run(baseline_metrics(questions, SUPPORT_FAQ, dev=dev)))
    return out


def support_rows(results: dict[str, Metrics]) -> list[dict[str, Any]]:
    """The ``make bench`` rows of the support-phrasing set: P@1 and MRR@5 with the lexicon,
    the same without it as reference."""
    mine, before = results["/answers"], results["/answers, lexicon off"]
    table = {name: m.as_json() for name, m in results.items()}
    return [
        {
            "name": "answers support P@1",
            "measured_as": (
                f"GET /answers, support set ({mine.answerable} questions + "
                f"{mine.unanswerable} unanswerable), no org synonyms; ref: lexicon off"
            ),
            "figure": mine.p_at_1,
            "reference": before.p_at_1,
            "unit": "share",
            "target": f">= {TARGET_SUPPORT_P_AT_1}",
            "met": mine.p_at_1 >= TARGET_SUPPORT_P_AT_1,
            "methods": table,
        },
        {
            "name": "answers support MRR@5",
            "measured_as": "same run; ref: lexicon off",
            "figure": mine.mrr_at_5,
            "reference": before.mrr_at_5,
            "unit": "share",
            "target": "info",
            "met": None,
        },
    ]


def answers_quality_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: the test split (a fixed subset in quick mode), /answers on
    the bench's server with the response cache off."""
    questions = load_set("test", QUICK_LIMIT if bench.quick else None)
    key, entry_of = _load_and_embed(bench.world, bench.uncached.base)
    results = measure(bench.uncached.base, ORG, key, questions, entry_of)
    print_table(results, "answers quality (StackFAQ test split)")
    key, entry_of = _load_and_embed(bench.world, bench.uncached.base, SUPPORT_ORG, SUPPORT_FAQ)
    support = measure_support(bench.uncached.base, SUPPORT_ORG, key, entry_of)
    print_table(support, "answers quality (support phrasings)")
    return [*rows(results, questions), *support_rows(support)]


def standalone(split: str, limit: int | None) -> dict[str, Metrics]:
    from bench.standalone import in_world

    questions = load_set(split, limit)

    def work(world: Any) -> dict[str, Metrics]:
        server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        key, entry_of = _load_and_embed(world, server.base)
        return measure(server.base, ORG, key, questions, entry_of)

    return in_world(work)


def standalone_support() -> dict[str, Metrics]:
    from bench.standalone import in_world

    def work(world: Any) -> dict[str, Metrics]:
        server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        key, entry_of = _load_and_embed(world, server.base, SUPPORT_ORG, SUPPORT_FAQ)
        return measure_support(server.base, SUPPORT_ORG, key, entry_of)

    return in_world(work)
