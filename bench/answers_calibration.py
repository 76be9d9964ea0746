"""Calibrating ``confident`` per language (issue 38): the thresholds of
``api.answers.ranking.CONFIDENT`` fitted on the dev split of each language's sets, reported on
the test split.

    .venv/bin/python -m bench.answers_calibration [--scores FILE]

One world (embedded PostgreSQL and Redis), one server; each set loaded into an org through the
API with its embeddings backfilled, and every question of both splits asked of ``GET
/answers?limit=5`` in the reader's locale. The first two scores of each answer are kept
(``--scores``: written to, or read back from, that JSON file), then per language and leg the
fit picks, on the dev split, the score and lead over the second result that make the most
answerable questions confident and right while at least ``TARGET_PRECISION`` of the confident
answers are right (an unanswerable question answered confidently is a wrong one) and at least
``TARGET_ABSTENTION`` of the unanswerable questions stay not confident. Sets (README.md):

- English (the semantic leg's blend of WordLlama's and USE's cosines): StackFAQ
  (``questions.jsonl``) and the support set (``support.jsonl``), pooled.
- Arabic (the multilingual model alone: WordLlama does not embed Arabic): XQuAD-R, an Arabic
  org.
- French (the multilingual model alone): Tatoeba, an English org with every French
  translation published, the French questions with one typo in every word of 5+ letters (as
  written they are the titles), a fifth of the pairs held out (unanswerable).
- Cross-lingual (the reader's language, an untranslated English FAQ): XQuAD-R Arabic questions
  and Tatoeba French ones against the English orgs, scored by the multilingual leg.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TARGET_PRECISION = 0.9
TARGET_ABSTENTION = 0.5
SCORES = [round(0.30 + 0.01 * i, 2) for i in range(71)]  # 0.30 .. 1.00
MARGINS = [round(0.01 * i, 2) for i in range(2, 21)]  # 0.02 .. 0.20: a near tie is never sure


@dataclass(frozen=True)
class Case:
    """One question asked: its language and leg, its split, the entry that answers it (None:
    unanswerable) and the first two results (entry, score)."""

    language: str
    leg: str  # "semantic" | "lexical" | "cross-lingual"
    set: str
    split: str
    expected: str | None
    top: list[tuple[str, float]]


@dataclass(frozen=True)
class Outcome:
    answerable: int
    unanswerable: int
    confident_right: float  # share of answerable questions
    precision: float  # right among every confident first answer (unanswerable ones included)
    abstention: float  # share of unanswerable questions not confident

    def line(self) -> str:
        return (
            f"precision {self.precision:6.1%}  confident+right {self.confident_right:6.1%}"
            f"  unanswerable not confident {self.abstention:6.1%}"
            f"  ({self.answerable} + {self.unanswerable})"
        )


def is_confident(top: Sequence[tuple[str, float]], score: float, margin: float) -> bool:
    """``ranking.confident`` on the scores /answers returned (rounded to 4 places)."""
    if not top:
        return False
    second = top[1][1] if len(top) > 1 else 0.0
    return top[0][1] >= score and top[0][1] - second >= margin - 1e-9


def outcome(cases: Sequence[Case], score: float, margin: float) -> Outcome:
    answerable = [c for c in cases if c.expected is not None]
    unanswerable = [c for c in cases if c.expected is None]
    sure = [c for c in cases if is_confident(c.top, score, margin)]
    right = [c for c in sure if c.expected is not None and c.top[0][0] == c.expected]
    return Outcome(
        len(answerable),
        len(unanswerable),
        len(right) / max(1, len(answerable)),
        len(right) / len(sure) if sure else 1.0,
        1 - sum(c in sure for c in unanswerable) / max(1, len(unanswerable)),
    )


def fit(cases: Sequence[Case]) -> tuple[float, float]:
    """The (score, margin) of the grid that makes the most answerable ``cases`` confident and
    right within the targets; on a tie the higher score, then the wider margin."""
    best: tuple[float, float, float] | None = None
    for score in SCORES:
        for margin in MARGINS:
            o = outcome(cases, score, margin)
            if o.precision < TARGET_PRECISION or o.abstention < TARGET_ABSTENTION:
                continue
            key = (o.confident_right, score, margin)
            if best is None or key > best:
                best = key
    if best is None:
        return 1.0, 0.2
    return best[1], best[2]


# ---- asking /answers -----------------------------------------------------------------------


def ask_all(
    base: str, slug: str, key: str, locale: str, texts: Sequence[str], entry_of: dict[str, str]
) -> list[list[tuple[str, float]]]:
    from bench.http import call

    def ask(text: str) -> list[tuple[str, float]]:
        query = urllib.parse.urlencode({"q": text, "limit": 5, "locale": locale})
        status, raw = call(base, "GET", f"/api/v1/{slug}/answers?{query}", key)
        if status != 200:
            raise RuntimeError(f"/answers {status}: {raw[:200]!r}")
        items = json.loads(raw)["data"][:2]
        return [(entry_of.get(i["question"]["id"], "?"), float(i["score"])) for i in items]

    async def many() -> list[list[tuple[str, float]]]:
        gate = asyncio.Semaphore(4)

        async def one(t: str) -> list[tuple[str, float]]:
            async with gate:
                return await asyncio.to_thread(ask, t)

        return list(await asyncio.gather(*(one(t) for t in texts)))

    return asyncio.run(many())


def english_cases(world: Any, base: str) -> Iterator[Case]:
    from bench.answers.over_http import ORG, SUPPORT_ORG, _load_and_embed
    from bench.answers_quality import SUPPORT_FAQ, SUPPORT_QUESTIONS, load_questions

    for org, faq, questions, name in (
        (ORG, "faq.json", "questions.jsonl", "stackfaq"),
        (SUPPORT_ORG, SUPPORT_FAQ, SUPPORT_QUESTIONS, "support"),
    ):
        key, entry_of = _load_and_embed(world, base, org, faq)
        qs = load_questions(questions)
        tops = ask_all(base, org, key, "en", [q.text for q in qs], entry_of)
        for q, top in zip(qs, tops, strict=True):
            yield Case("en", "semantic", name, q.split, q.entry if q.answerable else None, top)


def language_cases(world: Any, base: str) -> Iterator[Case]:
    from bench.answers_languages import SCENARIOS, _load_org, query_texts, questions_of

    legs = {
        "xquad ar": ("ar", "multilingual"),
        "tatoeba en+fr, fr reader (typos)": ("fr", "multilingual"),
        "xquad en, ar reader (cross-lingual)": ("ar", "cross-lingual"),
        "tatoeba en, fr reader (cross-lingual)": ("fr", "cross-lingual"),
    }
    for n, s in enumerate(SCENARIOS):
        if s.name not in legs:
            continue
        language, leg = legs[s.name]
        key, entry_of = _load_org(world, base, s, f"bench-calibration-{n}")
        _, answerable, unanswerable = questions_of(s, "all")
        texts = query_texts(s, answerable)[0] + [q.text[s.reader] for q in unanswerable]
        tops = ask_all(base, f"bench-calibration-{n}", key, s.reader, texts, entry_of)
        for q, top in zip([*answerable, *unanswerable], tops, strict=True):
            expected = q.entry if q.answerable else None
            yield Case(language, leg, s.name, q.split, expected, top)


def collect() -> list[Case]:
    from bench.standalone import in_world

    def work(world: Any) -> list[Case]:
        server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        return [*english_cases(world, server.base), *language_cases(world, server.base)]

    return in_world(work)


def report(cases: Sequence[Case]) -> dict[str, Any]:
    """Per language and leg: the thresholds fitted on dev, and what they and the ones in
    ``ranking.CONFIDENT`` give on dev and test."""
    from api.answers.ranking import thresholds_for

    out: dict[str, Any] = {}
    for language, leg in sorted({(c.language, c.leg) for c in cases}):
        mine = [c for c in cases if (c.language, c.leg) == (language, leg)]
        dev = [c for c in mine if c.split == "dev"]
        test = [c for c in mine if c.split == "test"]
        score, margin = fit(dev)
        now = thresholds_for(language, leg)
        print(f"{language} {leg}: fitted on dev score {score:.2f} margin {margin:.2f}")
        print(f"  dev  {outcome(dev, score, margin).line()}")
        print(f"  test {outcome(test, score, margin).line()}")
        print(f"  in code: score {now.score:.2f} margin {now.margin:.2f}")
        print(f"  dev  {outcome(dev, now.score, now.margin).line()}")
        print(f"  test {outcome(test, now.score, now.margin).line()}")
        out[f"{language} {leg}"] = {
            "fitted": [score, margin],
            "in_code": [now.score, now.margin],
            "test_fitted": asdict(outcome(test, score, margin)),
            "test_in_code": asdict(outcome(test, now.score, now.margin)),
        }
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answers_calibration")
    parser.add_argument("--scores", type=Path, help="write the scores here, or read them back")
    args = parser.parse_args(argv)
    if args.scores is not None and args.scores.exists():
        cases = [
            Case(**{**c, "top": [tuple(t) for t in c["top"]]})
            for c in json.loads(args.scores.read_text())
        ]
    else:
        cases = collect()
        if args.scores is not None:
            args.scores.write_text(json.dumps([asdict(c) for c in cases]))
    print(json.dumps(report(cases)))
    return 0


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
