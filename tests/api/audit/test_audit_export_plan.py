"""The audit export plans its reads by size (issue 26, made steady under load): a log of
huge entries is measured a few at a time, so no planning read converts hundreds of megabytes
of JSON to text in one statement; a log of small entries is planned in full batches."""

from __future__ import annotations

from types import SimpleNamespace

from api.audit.service import EXPORT_BATCH, EXPORT_PLAN_BYTES, next_plan_limit


def rows(*sizes: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(size=size) for size in sizes]


def test_small_entries_are_planned_in_full_batches() -> None:
    assert next_plan_limit(rows(*[400] * 50)) == EXPORT_BATCH


def test_huge_entries_are_planned_a_few_at_a_time() -> None:
    limit = next_plan_limit(rows(*[800_000] * 50))
    assert 1 <= limit < 50
    assert limit * 800_000 <= EXPORT_PLAN_BYTES


def test_one_entry_larger_than_the_plan_budget_is_planned_alone() -> None:
    assert next_plan_limit(rows(EXPORT_PLAN_BYTES * 3)) == 1
