"""The language sets of the answers evaluation (issue 38), as ``bench.answers_languages``
reads them: XQuAD-R Arabic and English (``xquad_ar.json``), Tatoeba's French-English pairs
(``tatoeba_fr.json``) and the blind held-out support sets (``HELDOUT_SETS``), all
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
    return load_parallel("xquad_ar.json")


# The blind held-out support sets (``bench/answers/README.md``): a help center and its
# customers' questions, every question in the test split. A: a bookkeeping SaaS, en/fr/ar,
# first run as it came; B: vacation rentals, en/fr/ar, written to check the cross-lingual
# floor made after A; C: grocery delivery, en/fr/ar, written to check the lexicon groups
# made after A's and B's misses; D: a gym chain, English, run once on the final state; E: a
# mobile carrier, en/fr/ar, written to check the multilingual model in the semantic leg; F: a
# project-management SaaS, en/fr/ar, written to check the question vectors' third part.
HELDOUT_SETS = {
    "heldout": "heldout_support.json",
    "heldout-b": "heldout_support_b.json",
    "heldout-c": "heldout_support_c.json",
    "heldout-d": "heldout_support_d.json",
    "heldout-e": "heldout_support_e.json",
    "heldout-f": "heldout_support_f.json",
}


def load_parallel(name: str) -> tuple[list[Entry], list[Question]]:
    """A set of ``name`` in ``xquad_ar.json``'s format: entries and questions with their text
    per language."""
    doc = json.loads((DATA / name).read_text(encoding="utf-8"))
    entries = [Entry(e["id"], e["inFaq"], e["title"], e["answer"]) for e in doc["entries"]]
    questions = [
        Question(q["entry"], q["answerable"], q["split"], q["text"]) for q in doc["questions"]
    ]
    return entries, questions


# The English entries of the sets with more than WordLlama's 50 nearest questions' worth
# together: the blind sets A to D and XQuAD-R (400 entries). Each set alone is small enough
# that the semantic leg's candidates are nearly the whole FAQ; pooled, which model reads the
# index decides which questions are candidates at all.
POOLED = ("heldout_support.json", "heldout_support_b.json", "heldout_support_c.json")
POOLED += ("heldout_support_d.json", "xquad_ar.json")


def load_pooled() -> tuple[list[Entry], list[Question]]:
    """The ``POOLED`` sets' English entries in one FAQ, each set's questions asked of it (ids
    prefixed with their set's file name; an answerable question's answer is its own set's)."""
    entries, questions = [], []
    for name in POOLED:
        prefix = name.removesuffix(".json")
        es, qs = load_parallel(name)
        entries += [
            Entry(f"{prefix}/{e.id}", e.in_faq, {"en": e.title["en"]}, {"en": e.answer["en"]})
            for e in es
        ]
        questions += [
            Question(f"{prefix}/{q.entry}", q.answerable, q.split, {"en": q.text["en"]}) for q in qs
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
