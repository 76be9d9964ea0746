"""Request and response models of questions, and the public shape of a question."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import Row

from api.questions.models import Question, QuestionRevision
from api.schemas import AudienceList, QueryArgs, RequestBody, ResponseModel, Timestamp
from tenancy.clock import iso

SLUG_MAX = 200
IDEMPOTENCY_KEY_MAX = 255
Title = Annotated[str, Field(min_length=1, max_length=500)]
Answer = Annotated[str, Field(min_length=1, max_length=100_000)]
Slug = Annotated[str, Field(min_length=1, max_length=SLUG_MAX)]
Order = Annotated[int, Field(ge=-1_000_000_000, le=1_000_000_000)]
# Any string: one that names no category of the org is 400 `category_not_found` (SPEC).
CategoryRef = str
Status = Literal["draft", "published", "scheduled", "archived"]
TranslationState = Literal["missing", "outdated", "draft", "published"]
LocaleTag = Annotated[str, Field(min_length=1, max_length=35)]


class QuestionCreate(RequestBody):
    title: Title
    answer: Answer
    category_id: CategoryRef
    status: Status
    slug: Slug | None = None
    order: Order = 0
    scheduled_publish_at: Timestamp | None = None
    audiences: AudienceList = Field(default_factory=list)


class QuestionUpdate(RequestBody):
    title: Title | None = None
    answer: Answer | None = None
    category_id: CategoryRef | None = None
    status: Status | None = None
    slug: Slug | None = None
    order: Order | None = None
    scheduled_publish_at: Timestamp | None = None
    audiences: AudienceList | None = None


class QuestionListQuery(QueryArgs):
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)
    q: str | None = Field(default=None, max_length=200)
    category: str | None = Field(default=None, max_length=200)
    status: Status | None = None
    # The language to serve (else Accept-Language; api/http/binding.py negotiates it).
    locale: LocaleTag | None = None
    # The translators' worklist: the state of each question's translation in ``locale``.
    translation: TranslationState | None = None
    # The question an import made of this source item (``zendesk:360012345``; issue 29).
    external_id: str | None = Field(default=None, min_length=1, max_length=300)


class ReadQuery(QueryArgs):
    """The query of a single read (documented; the binding reads ``locale``)."""

    locale: LocaleTag | None = None


class RevisionListQuery(QueryArgs):
    limit: int = Field(default=20, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)


class DraftActor(ResponseModel):
    type: str  # apiKey | member | system
    id: str
    key_fingerprint: str | None = None  # a member's actor: the key it used


class DraftSummary(ResponseModel):
    """A question's pending version as its reads show it (issue 30); ``GET …/draft`` has it
    whole."""

    updated_at: str
    updated_by: DraftActor
    review_state: Literal["pending", "approved", "rejected"] | None


class QuestionOut(ResponseModel):
    id: str
    slug: str
    locale: str  # the language of title and answer as served (read-only)
    title: str
    answer: str
    status: Status
    category_id: str
    order: int
    # The audiences it is kept for (issue 39; empty: everyone).
    audiences: list[str]
    published_at: str | None
    scheduled_publish_at: str | None
    created_at: str
    updated_at: str
    # The source item an import made it of (``zendesk:360012345``), else null (issue 29).
    external_id: str | None = None
    # Its draft (issue 30), null when none and always to publishable keys and the help
    # center; the same in reads, the responses of writes, event data and audit snapshots
    # (issue 40).
    draft: DraftSummary | None


class RevisionActor(ResponseModel):
    type: str
    id: str
    key_fingerprint: str | None = None  # a member's actor: the key it used (issue 30)


class QuestionSnapshot(ResponseModel):
    title: str
    answer: str
    category_id: str
    status: Status
    slug: str
    order: int
    scheduled_publish_at: str | None
    audiences: list[str] = []  # revisions before issue 39 lack it


class RevisionOut(ResponseModel):
    id: str
    number: int
    actor: RevisionActor
    changed_fields: list[str]
    snapshot: QuestionSnapshot
    created_at: str


# ---- the public shape, declared once (issue 40) ---------------------------------------------
# Each field of a question as the API shows it: its public name, the attribute of a row (an ORM
# object, a Core row, a ``RETURNING`` row) it comes from, and its JSON kind. It makes
# ``question_public`` (reads, the responses of writes, event data, audit snapshots), the reads'
# columns and the JSON the hot reads build in SQL (``api.questions.queries``); ``QuestionOut``
# (OpenAPI) must name the same fields in the same order (checked below). Then ``draft``, the
# summary of the question's draft (``api.questions.read_drafts``), last.
TEXT, INT, STAMP, LIST = "text", "int", "stamp", "list"
SHAPE: tuple[tuple[str, str, str], ...] = (
    ("id", "id", TEXT),
    ("slug", "slug", TEXT),
    ("locale", "locale", TEXT),
    ("title", "title", TEXT),
    ("answer", "answer", TEXT),
    ("status", "status", TEXT),
    ("categoryId", "category_id", TEXT),
    ("order", "sort_order", INT),
    ("audiences", "audiences", LIST),
    ("publishedAt", "published_at", STAMP),
    ("scheduledPublishAt", "scheduled_publish_at", STAMP),
    ("createdAt", "created_at", STAMP),
    ("updatedAt", "updated_at", STAMP),
    ("externalId", "external_id", TEXT),
)
DRAFT = "draft"
_ORDER = tuple(name for name, _, _ in SHAPE)


def question_public(q: Question | Row[Any], draft: dict[str, Any] | None) -> dict[str, Any]:
    """The question exactly as GET returns it to a secret key: ``SHAPE`` from the row, then
    ``draft`` (its summary, ``read_drafts.draft_summary``; None when it has none or the reader
    may not see drafts). Also the response of its writes, the ``data`` of its events and its
    audit snapshots."""
    out = {
        name: iso(getattr(q, attr))
        if kind == STAMP
        else list(getattr(q, attr) or ())
        if kind == LIST
        else getattr(q, attr)
        for name, attr, kind in SHAPE
    }
    out[DRAFT] = draft
    return out


PUBLIC_FIELDS = tuple(
    QuestionOut.model_fields[name].alias or name for name in QuestionOut.model_fields
)
if (*_ORDER, DRAFT) != PUBLIC_FIELDS:  # the OpenAPI schema and the JSON cannot drift
    raise TypeError(f"QuestionOut {PUBLIC_FIELDS} is not the public shape {(*_ORDER, DRAFT)}")

# The fields a client edits, as a revision's snapshot keeps them (public names).
EDITABLE = (
    "title",
    "answer",
    "categoryId",
    "status",
    "slug",
    "order",
    "scheduledPublishAt",
    "audiences",
)


def snapshot_of(public: dict[str, Any]) -> dict[str, Any]:
    return {name: public[name] for name in EDITABLE}


def revision_public(r: QuestionRevision) -> dict[str, Any]:
    return {
        "id": r.id,
        "number": r.number,
        "actor": r.actor,
        "changedFields": r.changed_fields,
        "snapshot": r.snapshot,
        "createdAt": iso(r.created_at),
    }
