"""Request and response models of exports."""

from __future__ import annotations

from typing import Literal

from api.schemas import QueryArgs, ResponseModel


class ExportJobQuery(QueryArgs):
    revisions: bool = False  # each question's revisions too


class ExportOut(ResponseModel):
    id: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    includes_revisions: bool
    counts: dict[str, int]  # lines per file: categories, questions, translations, ...
    size_bytes: int
    download_url: str | None  # when succeeded, until expiresAt (the admin key is needed)
    error: str | None
    created_at: str
    finished_at: str | None
    expires_at: str | None
