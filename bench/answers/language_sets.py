"""The language sets of the answers evaluation (issue 38), as ``bench.answers_languages``
reads them: XQuAD-R Arabic and English (``xquad_ar.json``), Tatoeba's French-English pairs
(``tatoeba_fr.json``) and the blind held-out support set (``heldout_support.json``), all
described in ``bench/answers/README.md``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Entry:
    id: str
    in_faq: bool
    title: dict[str, str]
    answer: dict[str, str]


@dataclass(frozen=True)
class Question:
    entry: str
    answerable: bool
    split: str
    text: dict[str, str]


def load_xquad() -> tuple[list[Entry], list[Question]]:
    return _load_parallel("xquad_ar.json")


def load_heldout() -> tuple[list[Entry], list[Question]]:
    """The blind held-out support set (``heldout_support.json``): a help center and its
    customers' questions in English, French and Arabic, every question in the test split."""
    return _load_parallel("heldout_support.json")


def load_heldout_b() -> tuple[list[Entry], list[Question]]:
    """The second blind held-out support set (``heldout_support_b.json``, a vacation-rental
    platform), written to check a change made after the first one's results."""
    return _load_parallel("heldout_support_b.json")


def load_heldout_c() -> tuple[list[Entry], list[Question]]:
    """The third blind held-out support set (``heldout_support_c.json``, a grocery delivery
    app), written to check the lexicon groups added after A's and B's misses."""
    return _load_parallel("heldout_support_c.json")


def load_heldout_d() -> tuple[list[Entry], list[Question]]:
    """The fourth blind held-out support set (``heldout_support_d.json``, a gym chain's app;
    English only), run once on the service as session 16 left it."""
    return _load_parallel("heldout_support_d.json")


def _load_parallel(name: str) -> tuple[list[Entry], list[Question]]:
    doc = json.loads((DATA / name).read_text(encoding="utf-8"))
    entries = [Entry(e["id"], e["inFaq"], e["title"], e["answer"]) for e in doc["entries"]]
    questions = [
        Question(q["entry"], q["answerable"], q["split"], q["text"]) for q in doc["questions"]
    ]
    return entries, questions


TATOEBA_HELD_OUT = 27  # a fifth of the 135 pairs: their questions are the unanswerable ones


def tatoeba_held_out(ids: Sequence[str]) -> frozenset[str]:
    """The pairs left out of the FAQ: the ``TATOEBA_HELD_OUT`` smallest
    ``sha256("tatoeba-heldout:" + id)``."""

    def order(i: str) -> str:
        return hashlib.sha256(f"tatoeba-heldout:{i}".encode()).hexdigest()

    return frozenset(sorted(ids, key=order)[:TATOEBA_HELD_OUT])


def load_tatoeba() -> tuple[list[Entry], list[Question]]:
    """Each pair an entry (its English sentence the title, and the answer) and a question (its
    French sentence); the held-out pairs' questions are unanswerable."""
    doc = json.loads((DATA / "tatoeba_fr.json").read_text(encoding="utf-8"))
    held_out = tatoeba_held_out([p["id"] for p in doc["pairs"]])
    entries, questions = [], []
    for p in doc["pairs"]:
        text = {"en": p["en"], "fr": p["fr"]}
        kept = p["id"] not in held_out
        entries.append(Entry(p["id"], kept, text, text))
        questions.append(Question(p["id"], kept, p["split"], text))
    return entries, questions
