"""Writes of questions (SPEC "Questions", CONTRACT section 5): ``create_question``,
``update_question`` (PATCH), ``restore_revision``, ``delete_question``, ``reorder_questions``
and ``move_to_category``. Nothing here commits: the request (or the actor) owns the
transaction. Each write records its events in that transaction, and each change to an existing
question's fields also its revision.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from sqlalchemy import (
    Select,
    Table,
    Text,
    bindparam,
    exists,
    func,
    or_,
    select,
    update,
)
from sqlalchemy import cast as cast_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.service import checked_audiences
from api.categories.models import Category
from api.errors import (
    CategoryReferenceNotFound,
    SlugConflict,
    field_error,
)
from api.questions import read_drafts, review_gate
from api.questions.idempotency import Created, claim_key, store_response
from api.questions.models import RETURNED, PublishSchedule, Question
from api.questions.queries import changed as changed_row
from api.questions.queries import count_live, load
from api.questions.revisions import add_revisions, changed_fields, question_audit, revision_changes
from api.questions.rules import (
    COLUMNS,
    LIVE,
    PUBLISHED,
    SLUGS,
    UNSET,
    category_id,
    category_ref,
    check_not_null,
    state_on_create,
    state_on_update,
)
from api.questions.schemas import QuestionCreate, question_public
from api.reviews.workflow import REQUIRE_REVIEW, note_require_review
from api.search import searchable, text_vector, text_vector_of
from billing.limits import ensure_within_cap
from tenancy.clock import utcnow
from tenancy.generations import INSERT, note_write
from tenancy.ids import looks_like_id, new_id
from tenancy.outbox import events_written, outbox_insert_when, outbox_parameters, record_events
from tenancy.principal import Principal
from tenancy.schedule import mark_due

# ---- create --------------------------------------------------------------------------------


async def create_question(
    session: AsyncSession,
    org: Principal,
    body: QuestionCreate,
    *,
    idempotency_key: str | None = None,
    request_hash: str = "",
    external_id: str | None = None,
) -> Created:
    """``external_id``: the source item an import makes it of (its caller writes the
    reference in the same transaction); the response and the events show it."""
    org.require("write")
    if body.slug is not None:
        SLUGS.check_manual(body.slug)
    status, scheduled_at = state_on_create(body.status, body.scheduled_publish_at)
    if idempotency_key is not None:
        replay = await claim_key(session, idempotency_key, request_hash)
        if replay is not None:
            return replay
    category, taken = await _category_and_taken_slugs(
        session, body.category_id, None if body.slug is not None else body.title
    )
    # Read with the category (no round trip of its own); a refusal rolls the claim back.
    await review_gate.check_create(session, body.status, body.scheduled_publish_at)
    now = utcnow()
    events = ["question.created"] + (["question.published"] if status == PUBLISHED else [])
    public = await _insert_with_events(
        session,
        org,
        {
            "id": new_id("q"),
            "slug": body.slug,
            "locale": org.default_locale,
            "title": body.title,
            "answer": body.answer,
            "status": status,
            "category_id": category,
            "sort_order": body.order,
            "audiences": await checked_audiences(session, body.audiences, "audiences"),
            "published_at": now if status == PUBLISHED else None,
            "scheduled_publish_at": scheduled_at,
            "revision_count": 0,
            "created_at": now,
            "updated_at": now,
        },
        events,
        manual_slug=body.slug,
        taken=taken,
        external_id=external_id,
    )
    if scheduled_at is not None:
        await mark_due(session, PublishSchedule, org.id, scheduled_at)
    created = Created(201, {"data": public})
    if idempotency_key is not None:
        await store_response(session, idempotency_key, created)

    async def count() -> int:
        return await count_live(session)

    # Last before the commit: the cap's per-org lock is held for the count and COMMIT only.
    await ensure_within_cap(session, org.id, org.plan, "questions", count)
    return created


def _category_statement(by_id: bool, with_slugs: bool) -> Select[Any]:
    """The live category ``:category`` (by id, else by slug; locked as ``rules.category_id``
    locks it) and, with ``with_slugs``, the live slugs equal to ``:slug_base`` or like
    ``:slug_pattern``."""
    category = (
        select(Category.id)
        .where(category_ref(bindparam("category"), by_id))
        .with_for_update(read=True, key_share=True)
        .subquery("category")
    )
    stmt = select(category.c.id, REQUIRE_REVIEW)
    if with_slugs:
        taken = select(Question.slug).where(
            LIVE,
            or_(
                Question.slug == bindparam("slug_base"),
                Question.slug.like(bindparam("slug_pattern")),
            ),
        )
        stmt = stmt.add_columns(func.array(taken.scalar_subquery()))
    return stmt


_CATEGORY = {
    (by_id, with_slugs): _category_statement(by_id, with_slugs)
    for by_id in (False, True)
    for with_slugs in (False, True)
}


async def _category_and_taken_slugs(
    session: AsyncSession, ref: str, title: str | None
) -> tuple[str, set[str]]:
    """One round trip: the live category ``ref`` (an id or a slug), locked against a
    concurrent delete (the lock of ``rules.category_id``), else 400; the org's
    ``requireReview`` for the review rules; with ``title`` (an automatic slug) also the live
    slugs its slug could collide with (``SlugRule.next_free``)."""
    params = {"category": ref}
    if title is not None:
        base, pattern = SLUGS.base_and_pattern(title)
        params |= {"slug_base": base, "slug_pattern": pattern}
    stmt = _CATEGORY[looks_like_id(ref, "cat"), title is not None]
    found = (await session.execute(stmt, params)).first()
    if found is None:
        raise CategoryReferenceNotFound(
            "The category does not exist in this organization.",
            details=field_error("categoryId", "not found"),
        )
    note_require_review(session, found.require_review)
    return found[0], set(found[2]) if title is not None else set()


# The columns a create writes from parameters (``search_vector`` is computed from the words).
_CREATE_COLUMNS = (
    "id",
    "slug",
    "locale",
    "title",
    "answer",
    "status",
    "category_id",
    "sort_order",
    "audiences",
    "published_at",
    "scheduled_publish_at",
    "revision_count",
    "created_at",
    "updated_at",
)
_create_statements: dict[tuple[str, int], Select[Any]] = {}


def _create_statement(locale: str, events: int) -> Select[Any]:
    """``WITH question AS (INSERT ... ON CONFLICT DO NOTHING RETURNING id), events AS (INSERT
    INTO outbox ... WHERE EXISTS (SELECT FROM question)) SELECT id FROM question``, built once
    per locale (its search configuration) and number of events; values are parameters."""
    key = (locale, events)
    stmt = _create_statements.get(key)
    if stmt is not None:
        return stmt
    table = cast(Table, Question.__table__)
    values_: dict[str, Any] = {
        name: bindparam(name, type_=table.c[name].type) for name in _CREATE_COLUMNS
    }
    values_["search_vector"] = text_vector_of(
        locale,
        cast_(bindparam("words_primary", type_=Text), Text),
        cast_(bindparam("words_secondary", type_=Text), Text),
    )
    question = (
        pg_insert(table)
        .values(**values_)
        .on_conflict_do_nothing(index_elements=[table.c.slug], index_where=LIVE)
        .returning(table.c.id)
        .cte("question")
    )
    outbox = outbox_insert_when(events, exists(select(question.c.id))).cte("events")
    stmt = select(question.c.id).add_cte(outbox)
    if len(_create_statements) < 256:  # bounded: locales are few
        _create_statements[key] = stmt
    return stmt


async def _insert_with_events(
    session: AsyncSession,
    org: Principal,
    values_: dict[str, Any],
    events: list[str],
    *,
    manual_slug: str | None,
    taken: set[str],
    external_id: str | None,
) -> dict[str, Any]:
    """The question and its outbox events in one statement (``SlugRule.insert``'s rule: ``ON
    CONFLICT`` on the live-slug index skips the row, and then its events too; a manual slug
    is a 409, an automatic one is picked again), then the outbox mark. Returns the public
    shape (also the events' data: the row exactly as inserted), with the ``created`` entry of
    the org's audit log as the statement's last event."""
    stmt = _create_statement(values_["locale"], len(events) + 1)
    words = {
        "words_primary": searchable(values_["title"]),
        "words_secondary": searchable(values_["answer"]),
    }
    for attempt in range(20):
        if manual_slug is None:
            if attempt:
                taken = set((await session.execute(SLUGS.taken(values_["title"]))).scalars())
            values_["slug"] = SLUGS.first_free(values_["title"], taken)
        # A new question has no draft.
        public = question_public(
            cast(Question, SimpleNamespace(**values_, external_id=external_id)), None
        )
        params = {
            **{name: values_[name] for name in _CREATE_COLUMNS},
            **words,
            **outbox_parameters(
                [(event, public) for event in events]
                + [question_audit("created", org.actor, public["id"], None, public)]
            ),
        }
        row = (await session.execute(stmt, params)).first()
        if row is not None:
            note_write(session.info, Question.__table__, INSERT)  # a plain insert
            await events_written(session, org.id)
            return public
        if manual_slug is not None:
            raise SlugConflict()
    raise SlugConflict("Could not allocate a free slug; retry.")


# ---- PATCH and restore ---------------------------------------------------------------------


async def _emit_changes(
    session: AsyncSession,
    org: Principal,
    action: str,
    before: dict[str, Any],
    after: dict[str, Any],
) -> None:
    """The change's webhook events and its audit entry (``action``: ``updated`` or
    ``restored``, the changed fields only), one statement."""
    events = ["question.updated"]
    if after["status"] == PUBLISHED and before["status"] != PUBLISHED:
        events.append("question.published")
    elif before["status"] == PUBLISHED and after["status"] != PUBLISHED:
        events.append("question.unpublished")
    audit = question_audit(action, org.actor, after["id"], *changed_fields(before, after))
    await record_events(session, org.id, [(event, after) for event in events] + [audit])


async def _apply(
    session: AsyncSession,
    org: Principal,
    question: Question,
    changes: dict[str, Any],
    action: str = "updated",
    *,
    reviewed: bool = False,
) -> dict[str, Any]:
    """One PATCH on a locked question: new values, one revision, the events of the change
    (its audit entry's ``action``: ``updated``, or ``restored`` for a revision restore).
    The review rules (``review_gate``) hold here, whatever the door; ``reviewed``: an
    approved draft being published."""
    org.require("write")
    check_not_null(changes)
    await review_gate.check_change(session, question, changes, reviewed=reviewed)
    # Before the change: its revision's snapshot and the audit's changed fields (an update's
    # audit lists the question's own fields; its draft is audited by the draft's writes).
    before = question_public(question, None)
    new: dict[str, Any] = {}
    for field in ("title", "answer", "order"):
        if field in changes:
            new[COLUMNS[field]] = changes[field]
    if "slug" in changes and changes["slug"] != question.slug:
        SLUGS.check_manual(changes["slug"])
        new["slug"] = changes["slug"]
    if "categoryId" in changes and changes["categoryId"] != question.category_id:
        new["category_id"] = await category_id(session, changes["categoryId"])
    if "audiences" in changes:
        new["audiences"] = await checked_audiences(session, changes["audiences"], "audiences")
    status, scheduled_at = state_on_update(
        question.status,
        question.scheduled_publish_at,
        changes.get("status"),
        changes.get("scheduledPublishAt", UNSET),
    )
    new["status"] = status
    new["scheduled_publish_at"] = scheduled_at
    now = utcnow()
    if status == PUBLISHED and question.status != PUBLISHED:
        new["published_at"] = now
    elif status != PUBLISHED:
        new["published_at"] = None
    new = {col: value for col, value in new.items() if getattr(question, col) != value}
    changed = [field for field, col in COLUMNS.items() if col in new]
    number = question.revision_count + 1
    values_: dict[str, Any] = {**new, "revision_count": number}
    if new:
        values_["updated_at"] = now
    if "title" in new or "answer" in new:
        values_["search_vector"] = text_vector(
            question.locale, new.get("title", question.title), new.get("answer", question.answer)
        )
    # The question as GET shows it after the change, its draft included, from the UPDATE
    # itself (issue 40: no round trip more).
    cleared = review_gate.clear_approval(question.id)
    statement = (
        update(Question)
        .where(Question.id == question.id)
        .values(**values_)
        .returning(*RETURNED, *read_drafts.draft_returning(cleared))
        .add_cte(cleared)
    )
    changed_row(session, question)
    if "slug" not in new:
        row = (await session.execute(statement)).one()
    else:  # a slug taken meanwhile is a 409, and the transaction goes on to answer it
        try:
            async with session.begin_nested():
                row = (await session.execute(statement)).one()
        except IntegrityError as exc:
            if SLUGS.is_conflict(exc):
                raise SlugConflict() from None
            raise
    await add_revisions(session, org.actor, changed, now, [(question.id, number, before)])
    after = read_drafts.question_read(row, True)
    if new:
        await _emit_changes(session, org, action, before, after)
    if "scheduled_publish_at" in new and scheduled_at is not None:
        await mark_due(session, PublishSchedule, org.id, scheduled_at)
    return after


async def update_question(
    session: AsyncSession,
    org: Principal,
    ref: str,
    changes: dict[str, Any],
    *,
    reviewed: bool = False,
) -> dict[str, Any]:
    """PATCH: ``changes`` maps the client's field names to the values sent. The row lock
    serializes concurrent PATCHes, so none loses its revision."""
    question = await load(session, ref, lock=True)
    return await _apply(session, org, question, changes, reviewed=reviewed)


async def restore_revision(
    session: AsyncSession, org: Principal, ref: str, revision_id: str
) -> dict[str, Any]:
    """Apply a revision's snapshot as a new PATCH (which writes its own revision)."""
    question = await load(session, ref, lock=True)
    changes = await revision_changes(session, question.id, revision_id)
    return await _apply(session, org, question, changes, "restored")


async def delete_question(session: AsyncSession, org: Principal, ref: str) -> None:
    """Soft delete: invisible at once, its slug free; purged after 30 days."""
    org.require("write")
    question = await load(session, ref, lock=True)
    row = (
        await session.execute(
            update(Question)
            .where(Question.id == question.id)
            .values(deleted_at=utcnow())
            .returning(*read_drafts.draft_returning())
        )
    ).one()
    # As GET showed it: its draft from the statement (issue 40).
    before = question_public(question, read_drafts.draft_summary(row, True))
    audit = question_audit("deleted", org.actor, question.id, before, None)
    await record_events(session, org.id, [("question.deleted", before), audit])
