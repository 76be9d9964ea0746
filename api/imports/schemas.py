"""Request and response models of imports."""

from __future__ import annotations

from typing import Literal

from api.schemas import QueryArgs, ResponseModel

FormatName = Literal["zendesk", "intercom", "helpscout", "csv", "markdown", "faq"]


class ImportQuery(QueryArgs):
    format: FormatName
    dry_run: bool = False  # report what would happen; write nothing
    per_question_events: bool = False  # the usual question/category events as well


class ImportCounts(ResponseModel):
    created: int
    updated: int
    unchanged: int
    failed: int


class ImportCountsByKind(ResponseModel):
    """``counts`` per kind of item (a whole-job failure, ``item: "import"``, is in none)."""

    categories: ImportCounts
    questions: ImportCounts
    translations: ImportCounts
    settings: ImportCounts  # our own bundle's settings.json
    audiences: ImportCounts  # our own bundle's audiences.ndjson


class ImportProgress(ResponseModel):
    items: int  # items read and written so far
    bytes_read: int
    bytes_total: int


class ImportItemIssue(ResponseModel):
    item: str  # the item's source (``zendesk:360012345``, ``line 12``)
    field: str
    issue: str


class ImportJobOut(ResponseModel):
    id: str
    format: FormatName
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    dry_run: bool
    per_question_events: bool
    counts: ImportCounts
    counts_by_kind: ImportCountsByKind
    progress: ImportProgress
    errors: list[ImportItemIssue]  # the first 100 failed items
    warnings: list[ImportItemIssue]  # the first 100 remarks: HTML left out, slugs suffixed
    created_at: str
    started_at: str | None
    finished_at: str | None
