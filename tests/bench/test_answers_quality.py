"""The answers evaluation (issue 28): the data set's shape, the typo generator and the metrics."""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter

import pytest

from bench.answers_quality import (
    EvalSet,
    Question,
    Ranked,
    calibrate_threshold,
    evaluate,
    faq_entries,
    load_faq,
    load_questions,
    load_set,
    thresholded,
    typo_word,
    with_typos,
)


def damerau(a: str, b: str) -> int:
    """Optimal string alignment distance (insert, delete, substitute, adjacent swap)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


# ---- the data ------------------------------------------------------------------------------


def test_the_faq_has_100_entries_loaded_and_25_held_out() -> None:
    entries = load_faq()
    assert len(entries) == 125
    assert len({e.id for e in entries}) == 125
    assert sum(e.in_faq for e in entries) == 100 == len(faq_entries())
    assert len({e.title for e in faq_entries()}) == 100  # a title names its entry
    for e in entries:
        assert 1 <= len(e.title) <= 500 and 1 <= len(e.answer) <= 1000
    assert len({e.category for e in faq_entries()}) <= 15


def test_every_question_is_labelled_with_an_entry_and_split_about_evenly() -> None:
    by_id = {e.id: e for e in load_faq()}
    questions = load_questions()
    assert len(questions) == 1249
    for q in questions:
        assert q.entry in by_id
        assert q.answerable == by_id[q.entry].in_faq
        assert q.split in ("dev", "test")
    splits = Counter(q.split for q in questions)
    assert 0.45 < splits["dev"] / len(questions) < 0.55
    test = load_set("test")
    assert len(test.answerable) >= 200 and len(test.unanswerable) >= 100


def test_a_limited_set_is_a_fixed_subset_with_a_share_of_unanswerable() -> None:
    full = load_set("test")
    small = load_set("test", 60)
    assert len(small.answerable) == 60
    assert set(small.answerable) <= set(full.answerable)
    share = len(full.unanswerable) / len(full.answerable)
    assert abs(len(small.unanswerable) - round(60 * share)) <= 1
    assert load_set("test", 60) == small


# ---- typos ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(200))
def test_a_word_gets_exactly_one_edit_never_at_its_first_letter(seed: int) -> None:
    rng = random.Random(seed)
    word = rng.choice(["strikethrough", "Gmail", "account", "spreadsheet", "ABCDE", "aaaaa"])
    typo = typo_word(word, rng)
    assert typo != word
    assert damerau(word, typo) == 1
    assert typo[0] == word[0]


def test_every_word_of_five_letters_or_more_gets_one_typo_and_shorter_words_none() -> None:
    text = "How can I delete my Facebook account, and is it gone forever?"
    out = with_typos(text)
    words, typoed = re.findall(r"[A-Za-z]+", text), re.findall(r"[A-Za-z]+", out)
    assert len(words) == len(typoed)
    for w, t in zip(words, typoed, strict=True):
        assert damerau(w, t) == (1 if len(w) >= 5 else 0), (w, t)
    assert re.sub(r"[A-Za-z]+", "", out) == re.sub(r"[A-Za-z]+", "", text)  # punctuation kept


def test_typo_variants_are_deterministic_and_depend_on_the_seed() -> None:
    text = "Exporting gmail mails to my computer for backup purposes."
    assert with_typos(text) == with_typos(text)
    assert with_typos(text, 1) == with_typos(text, 1)
    assert len({with_typos(text, s) for s in range(10)}) > 5
    assert with_typos("How do I do it?") == "How do I do it?"


# ---- metrics -------------------------------------------------------------------------------


def q(text: str, entry: str, answerable: bool = True) -> Question:
    return Question(text, entry, answerable, "dev")


def test_the_metrics_of_a_known_ranking() -> None:
    answerable = [
        q("alpha one", "a"),
        q("bravo two", "b"),
        q("charlie three", "c"),
        q("delta", "d"),
    ]
    unanswerable = [q("nothing here", "x", False), q("echo unknown", "y", False)]
    table: dict[str, Ranked] = {
        "alpha one": [("a", 0.9, True)],  # right, confident
        "bravo two": [("z", 0.5, False), ("b", 0.4, False)],  # second
        "charlie three": [("c", 0.8, False)],  # right, not confident
        "delta": [("q", 0.9, True)] + [(f"n{i}", 0.1, False) for i in range(5)],  # wrong, confident
        "nothing here": [],
        "echo unknown": [("a", 0.7, True)],
    }

    # typo variants of "alpha one" and "charlie three" still found, the others not
    typos = {with_typos(t): table[t] for t in ("alpha one", "charlie three")}

    async def rank(text: str) -> Ranked:
        return table[text] if text in table else typos.get(text, [])

    m = asyncio.run(evaluate(rank, EvalSet(answerable, unanswerable)))
    assert m.answerable == 4 and m.unanswerable == 2
    assert m.p_at_1 == pytest.approx(2 / 4)
    assert m.mrr_at_5 == pytest.approx((1 + 0.5 + 1 + 0) / 4)
    assert m.typo_p_at_1 == pytest.approx(2 / 4)
    assert m.typo_drop == pytest.approx(0.0)
    assert m.unanswerable_not_confident == pytest.approx(1 / 2)
    assert m.answerable_confident_right == pytest.approx(1 / 4)
    assert m.confident_precision == pytest.approx(1 / 2)
    assert [x["question"] for x in m.misses] == ["bravo two", "delta"]
    assert m.targets() == {
        "p_at_1": False,
        "mrr_at_5": False,
        "typo_drop": True,
        "unanswerable_not_confident": True,
        "answerable_confident_right": False,
    }


def test_the_typo_drop_is_relative_and_a_rank_beyond_five_earns_nothing() -> None:
    answerable = [q(f"question number{i}", f"e{i}") for i in range(4)]

    async def rank(text: str) -> Ranked:
        if text.startswith("question number"):  # as written: all right
            return [(f"e{text[-1]}", 1.0, True)]
        # with typos ("question numbrer3"): right only for e0, and e1 ranked sixth
        i = text[-1]
        if i == "0":
            return [("e0", 1.0, False)]
        if i == "1":
            return [(f"x{n}", 0.5, False) for n in range(5)] + [("e1", 0.1, False)]
        return []

    m = asyncio.run(evaluate(rank, EvalSet(answerable, [])))
    assert m.p_at_1 == 1.0 and m.typo_p_at_1 == 0.25
    assert m.typo_drop == pytest.approx(0.75)
    assert m.unanswerable_not_confident == 0.0  # no unanswerable question asked
    assert m.answerable_confident_right == 1.0


def test_concurrency_does_not_change_the_figures() -> None:
    s = load_set("dev", 40)
    ids = [e.id for e in faq_entries()]

    async def rank(text: str) -> Ranked:
        await asyncio.sleep(0)
        h = sum(map(ord, text))
        return [(ids[(h + n) % len(ids)], 1.0 / (n + 1), n == 0 and h % 2 == 0) for n in range(5)]

    one = asyncio.run(evaluate(rank, s, concurrency=1))
    many = asyncio.run(evaluate(rank, s, concurrency=8))
    assert one.as_json() == many.as_json()


def test_a_threshold_calibrated_on_dev_leaves_half_its_unanswerable_not_confident() -> None:
    dev = EvalSet([], [q(f"u{i}", "x", False) for i in range(10)])
    scores = {f"u{i}": i / 10 for i in range(10)}

    def scorer(text: str) -> Ranked:
        return [("a", scores.get(text, 0.0), False), ("b", 0.0, False)]

    t = calibrate_threshold(scorer, dev)
    rank = thresholded(scorer, t)

    async def ask(text: str) -> Ranked:
        return await rank(text)

    flags = [asyncio.run(ask(f"u{i}"))[0][2] for i in range(10)]
    assert flags.count(False) == 5
    assert all(not item[2] for item in asyncio.run(ask("u9"))[1:])  # only the first can be
