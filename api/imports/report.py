"""An import's report: counts of items by outcome (``counts``, and the same per kind of item,
``countsByKind``), and the first per-item errors and warnings (``{item, field, issue}``),
bounded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from api.imports.items import (
    AudienceItem,
    CategoryItem,
    Invalid,
    Item,
    Note,
    QuestionItem,
    SettingsItem,
    TranslationItem,
)

MAX_LISTED = 100  # errors (and warnings) listed in a report; the counts go on past it
OUTCOMES = ("created", "updated", "unchanged", "failed")
KINDS = ("categories", "questions", "translations", "settings", "audiences")
BY_KIND = "byKind"  # the key of the per-kind counts inside the stored ``counts``


def kind_of(item: Item) -> str:
    if isinstance(item, CategoryItem):
        return "categories"
    if isinstance(item, QuestionItem):
        return "questions"
    if isinstance(item, TranslationItem):
        return "translations"
    if isinstance(item, SettingsItem):
        return "settings"
    if isinstance(item, AudienceItem):
        return "audiences"
    assert isinstance(item, Invalid)
    return item.kind


def empty_counts() -> dict[str, Any]:
    """The stored ``counts``: the outcomes' totals, and the same per kind under ``byKind``
    (one JSON column, so a job row of before keeps reading: its kinds read as zeros)."""
    return {
        **dict.fromkeys(OUTCOMES, 0),
        BY_KIND: {kind: dict.fromkeys(OUTCOMES, 0) for kind in KINDS},
    }


def public_counts(stored: dict[str, Any]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """``counts`` and ``countsByKind`` as the job shows them."""
    by_kind = stored.get(BY_KIND) or {}
    return (
        {k: int(stored.get(k, 0)) for k in OUTCOMES},
        {kind: {k: int(by_kind.get(kind, {}).get(k, 0)) for k in OUTCOMES} for kind in KINDS},
    )


@dataclass
class Report:
    counts: dict[str, Any] = field(default_factory=empty_counts)
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    items: int = 0

    def count(self, outcome: str, kind: str | None) -> None:
        self.counts[outcome] += 1
        if kind is not None:
            self.counts[BY_KIND][kind][outcome] += 1

    def fail(self, item: str, field_: str, issue: str, kind: str | None = None) -> None:
        self.count("failed", kind)
        if len(self.errors) < MAX_LISTED:
            self.errors.append({"item": item, "field": field_, "issue": issue[:500]})

    def warn(self, note: Note) -> None:
        if len(self.warnings) < MAX_LISTED:
            self.warnings.append(note.public())

    def stored(self) -> dict[str, Any]:
        return {"counts": self.counts, "errors": self.errors, "notes": self.warnings}
