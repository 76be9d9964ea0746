"""An import's report: counts of items by outcome, and the first per-item errors and
warnings (``{item, field, issue}``), bounded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from api.imports.items import Note

MAX_LISTED = 100  # errors (and warnings) listed in a report; the counts go on past it
OUTCOMES = ("created", "updated", "unchanged", "failed")


@dataclass
class Report:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    items: int = 0

    def count(self, outcome: str) -> None:
        self.counts[outcome] += 1

    def fail(self, item: str, field_: str, issue: str) -> None:
        self.counts["failed"] += 1
        if len(self.errors) < MAX_LISTED:
            self.errors.append({"item": item, "field": field_, "issue": issue[:500]})

    def warn(self, note: Note) -> None:
        if len(self.warnings) < MAX_LISTED:
            self.warnings.append(note.public())

    def stored(self) -> dict[str, Any]:
        return {"counts": self.counts, "errors": self.errors, "notes": self.warnings}
