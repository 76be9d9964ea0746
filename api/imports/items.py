"""What a parser gives the writer: one item per category, question or translation of the
source, in an order the writer can follow (a category before what it holds), and the
structural problems that make a whole upload unreadable (400, nothing written)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from api.imports.links import Link
from tenancy.errors import ServiceError


class MalformedUpload(ServiceError):
    """The upload cannot be read as its format: 400, naming where (line, item) and what."""

    status = 400
    code = "validation_failed"
    message = "The upload is not a valid file of its format."

    def __init__(self, issue: str) -> None:
        super().__init__(
            f"The upload is not a valid file of its format: {issue}",
            details=[{"field": "body", "issue": issue}],
        )


@dataclass
class Note:
    """A per-item remark of the report (``{item, field, issue}``)."""

    item: str
    field: str
    issue: str

    def public(self) -> dict[str, str]:
        return {"item": self.item, "field": self.field, "issue": self.issue}


@dataclass
class CategoryItem:
    source: str  # the external id (``zendesk:section:360001``)
    name: str
    description: str | None = None
    parent: str | None = None  # the parent's external id
    order: int = 0
    slug: str | None = None
    is_default: bool = False  # our own bundle: the default category (merged into the org's)
    audiences: list[str] | None = None  # slugs (our bundle); None: the source says nothing
    created_at: datetime | None = None  # the source's, when it says (``api/imports/times.py``)
    updated_at: datetime | None = None
    notes: list[Note] = field(default_factory=list)


@dataclass
class QuestionItem:
    source: str
    title: str
    answer: str  # Markdown
    status: str  # draft | published | archived | scheduled
    category: str | None = None  # the category's external id; None: the default category
    category_ref: str | None = None  # CSV and Markdown: a category by slug or name
    slug: str | None = None
    order: int = 0
    scheduled_publish_at: str | None = None
    audiences: list[str] | None = None  # slugs (our bundle); None: the source says nothing
    links: list[Link] = field(default_factory=list)  # the answer's (``api/imports/links.py``)
    link_key: str | None = None  # what links name it by, when not its source (Help Scout)
    created_at: datetime | None = None  # the source's, when it says (``api/imports/times.py``)
    updated_at: datetime | None = None
    notes: list[Note] = field(default_factory=list)


@dataclass
class TranslationItem:
    kind: str  # question | category
    source: str  # the translated resource's external id
    locale: str
    fields: dict[str, Any]  # title + answer, or name + description
    status: str | None = None  # questions: draft | published
    links: list[Link] = field(default_factory=list)  # the answer's (``api/imports/links.py``)
    created_at: datetime | None = None  # the source's, when it says (``api/imports/times.py``)
    updated_at: datetime | None = None
    notes: list[Note] = field(default_factory=list)


@dataclass
class SettingsItem:
    """Our own bundle: the org's settings (locales, help center)."""

    source: str
    values: dict[str, Any]
    notes: list[Note] = field(default_factory=list)


@dataclass
class AudienceItem:
    """Our own bundle: an audience of the exporting org, matched by slug (content names
    audiences by slug)."""

    source: str
    slug: str
    name: str
    description: str | None = None
    notes: list[Note] = field(default_factory=list)


@dataclass
class Invalid:
    """An item the parser could read but not use (a missing title): a failed item."""

    source: str
    field: str
    issue: str
    kind: str = "questions"  # what it would have been (its report's ``countsByKind``)


Item = CategoryItem | QuestionItem | TranslationItem | SettingsItem | AudienceItem | Invalid
