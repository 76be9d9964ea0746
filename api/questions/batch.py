"""The create command's batch form (issue 40: an import is a batch of the same writes): what
``service.create_question`` does for each new question (its scope and review rules, its row,
automatic slug, ``question.created``/``published`` events and ``created`` audit entry, the
plan's cap), in a few statements per batch instead of several per question: one lock of the
batch's categories, one read of the slugs its titles could take, one multi-row INSERT, one
INSERT of the events, one cap check. Its caller today is the import writer.

Anything out of the ordinary (a category gone, a slug taken meanwhile, the cap passed, review
required for a published question) raises the error ``create_question`` would have raised:
the writer then writes the batch again item by item (``Writer.write_batch``), so each item's
report is exactly the per-item one."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, cast

from sqlalchemy import (
    DateTime,
    Integer,
    String,
    Table,
    Text,
    any_,
    bindparam,
    func,
    literal,
    null,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.errors import CategoryReferenceNotFound, SlugConflict
from api.imports.conversion import words_in_converters
from api.questions import review_gate
from api.questions.models import Question
from api.questions.queries import count_live
from api.questions.revisions import question_audit
from api.questions.rules import LIVE, PUBLISHED, SLUGS, state_on_create
from api.questions.schemas import QuestionCreate, question_public
from api.search import text_vector_of
from billing.limits import ensure_within_cap
from tenancy.clock import utcnow
from tenancy.generations import INSERT, note_write
from tenancy.ids import looks_like_id, new_id
from tenancy.outbox import record_events
from tenancy.principal import Principal

_TEXTS = ARRAY(Text)
_TAKEN = select(Question.slug).where(
    LIVE,
    or_(
        Question.slug == any_(bindparam("bases", type_=_TEXTS)),
        Question.slug.like(any_(bindparam("patterns", type_=_TEXTS))),
    ),
)
# Per row, a parameter array each (``unnest`` of them is the rows); the rest is constant.
_ARRAYS: dict[str, ARRAY[Any]] = {
    "id": ARRAY(String),
    "slug": ARRAY(String),
    "title": ARRAY(Text),
    "answer": ARRAY(Text),
    "status": ARRAY(String),
    "category_id": ARRAY(String),
    "sort_order": ARRAY(Integer),
    "published_at": ARRAY(DateTime(timezone=True)),
    "created_at": ARRAY(DateTime(timezone=True)),
    "words_primary": ARRAY(Text),
    "words_secondary": ARRAY(Text),
}
_inserts: dict[str, Any] = {}


def _insert(locale: str) -> Any:
    """``create_question``'s INSERT (without its events, written for the batch at once) of
    every row of the parameter arrays, built once per locale (its search configuration)."""
    stmt = _inserts.get(locale)
    if stmt is None:
        table = cast(Table, Question.__table__)
        rows = (
            func.unnest(*(bindparam(name, type_=type_) for name, type_ in _ARRAYS.items()))
            .table_valued(*_ARRAYS)
            .render_derived("new")
        )
        columns: dict[str, Any] = {
            **{name: rows.c[name] for name in _ARRAYS if not name.startswith("words_")},
            "locale": bindparam("locale", type_=String),
            "scheduled_publish_at": null(),
            "revision_count": literal(0),
            "updated_at": rows.c.created_at,
            "search_vector": text_vector_of(locale, rows.c.words_primary, rows.c.words_secondary),
        }
        stmt = (
            pg_insert(table)
            .from_select(list(columns), select(*columns.values()))
            .on_conflict_do_nothing(index_elements=[table.c.slug], index_where=LIVE)
            .returning(table.c.id)
        )
        if len(_inserts) < 256:  # bounded: locales are few
            _inserts[locale] = stmt
    return stmt


@dataclass
class _New:
    id: str
    body: QuestionCreate
    status: str
    external_id: str | None


class NewQuestions:
    """The batch's new questions (automatic slug, not scheduled), written by ``flush``."""

    def __init__(self) -> None:
        self._new: list[_New] = []

    def __contains__(self, id_: str) -> bool:
        return any(n.id == id_ for n in self._new)

    def add(self, body: QuestionCreate, *, external_id: str | None = None) -> str:
        """The id the question will have (``create_question``'s checks of the body now)."""
        status, scheduled_at = state_on_create(body.status, body.scheduled_publish_at)
        assert scheduled_at is None  # scheduled questions are created one by one
        assert not body.audiences  # imports keep content for everyone (issue 39)
        if not looks_like_id(body.category_id, "cat"):
            raise CategoryReferenceNotFound()
        new = _New(new_id("q"), body, status, external_id)
        self._new.append(new)
        return new.id

    def clear(self) -> None:
        self._new = []

    async def flush(self, session: AsyncSession, org: Principal) -> None:
        new, self._new = self._new, []
        if not new:
            return
        org.require("write")
        for status in {n.status for n in new}:
            await review_gate.check_create(session, status, None)
        categories = sorted({n.body.category_id for n in new})
        found = set(
            (
                await session.execute(
                    select(Category.id)
                    .where(Category.id.in_(categories), Category.deleted_at.is_(None))
                    .with_for_update(read=True, key_share=True)
                )
            ).scalars()
        )
        if len(found) != len(categories):
            raise CategoryReferenceNotFound()
        bases, patterns = zip(*(SLUGS.base_and_pattern(n.body.title) for n in new), strict=True)
        taken = set(
            (
                await session.execute(
                    _TAKEN, {"bases": sorted(set(bases)), "patterns": sorted(set(patterns))}
                )
            ).scalars()
        )
        words = await words_in_converters([t for n in new for t in (n.body.title, n.body.answer)])
        params: dict[str, Any] = {name: [] for name in _ARRAYS}
        events: list[tuple[str, dict[str, Any]]] = []
        for i, n in enumerate(new):
            now = utcnow()  # each its own, as when created one by one
            slug = SLUGS.first_free(n.body.title, taken)
            taken.add(slug)
            values = {
                "id": n.id,
                "slug": slug,
                "locale": org.default_locale,
                "title": n.body.title,
                "answer": n.body.answer,
                "status": n.status,
                "category_id": n.body.category_id,
                "sort_order": n.body.order,
                "published_at": now if n.status == PUBLISHED else None,
                "scheduled_publish_at": None,
                "revision_count": 0,
                "created_at": now,
                "updated_at": now,
                "words_primary": words[2 * i],
                "words_secondary": words[2 * i + 1],
            }
            for name, column in params.items():
                column.append(values[name])
            public = question_public(
                # An imported question is for everyone (``add``): the column's default.
                cast(
                    Question,
                    SimpleNamespace(**values, audiences=[], external_id=n.external_id),
                ),
                None,
            )
            events.append(("question.created", public))
            if n.status == PUBLISHED:
                events.append(("question.published", public))
            events.append(question_audit("created", org.actor, n.id, None, public))
        statement = _insert(org.default_locale)
        params["locale"] = org.default_locale
        inserted = (await session.execute(statement, params)).scalars().all()
        if len(inserted) != len(new):
            raise SlugConflict()  # taken meanwhile: the batch is written item by item
        note_write(session.info, Question.__table__, INSERT)
        await record_events(session, org.id, events)

        async def count() -> int:
            return await count_live(session)

        await ensure_within_cap(session, org.id, org.plan, "questions", count)
