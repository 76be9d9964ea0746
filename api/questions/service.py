"""Question rules (SPEC "Questions", CONTRACT section 5). Services never commit: the request
(or the sweep actor) owns the transaction. Every mutation writes its revision and its events
in that transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Integer,
    String,
    and_,
    case,
    cast,
    column,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    update,
    values,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.errors import (
    CategoryReferenceNotFound,
    IdempotencyKeyReused,
    QuestionNotFound,
    RevisionNotFound,
    ServiceUnavailable,
    SlugConflict,
    ValidationErrorCode,
    ValidationFailed,
    field_error,
)
from api.questions.models import IdempotencyKey, PublishSchedule, Question, QuestionRevision
from api.questions.schemas import (
    PUBLIC_FIELDS,
    SLUG_MAX,
    QuestionCreate,
    question_public,
    revision_public,
    snapshot_of,
)
from api.search import prefix_query, tsquery, weighted_vector
from api.slugs import SlugRule
from billing.limits import ensure_room
from tasks.outbox import record_event, record_events
from tenancy.audit import Actor
from tenancy.clock import utcnow
from tenancy.ids import looks_like_id, new_id
from tenancy.middleware import OrgContext

LIVE = Question.deleted_at.is_(None)
# CONTRACT section 8: only `reorder` is an operation under /questions.
SLUGS = SlugRule(Question, LIVE, SLUG_MAX, frozenset({"reorder"}), "uq_questions_slug_live")
REVISIONS_KEPT = 50
IDEMPOTENCY_TTL = timedelta(hours=24)
PUBLISHED = "published"
SCHEDULED = "scheduled"
DRAFT = "draft"


# ---- reading -------------------------------------------------------------------------------


def _by_ref(ref: str) -> ColumnElement[bool]:
    return Question.id == ref if looks_like_id(ref, "q") else Question.slug == ref


async def _load(session: AsyncSession, ref: str, *, lock: bool = False) -> Question:
    stmt = select(Question).where(LIVE, _by_ref(ref))
    if lock:
        stmt = stmt.with_for_update()
    question = (await session.execute(stmt)).scalar_one_or_none()
    if question is None:
        raise QuestionNotFound()
    return question


# The columns of the public shape: reads select these rows, not ORM objects (no identity map,
# no search vector on the wire).
PUBLIC_COLUMNS: tuple[Any, ...] = (
    Question.id,
    Question.slug,
    Question.title,
    Question.answer,
    Question.status,
    Question.category_id,
    Question.sort_order,
    Question.published_at,
    Question.scheduled_publish_at,
    Question.created_at,
    Question.updated_at,
)


async def get_question(session: AsyncSession, ref: str) -> dict[str, Any]:
    row = (await session.execute(select(*PUBLIC_COLUMNS).where(LIVE, _by_ref(ref)))).first()
    if row is None:
        raise QuestionNotFound()
    return question_public(row)


def _category_filter(ref: str) -> ColumnElement[bool]:
    by_ref = Category.id == ref if looks_like_id(ref, "cat") else Category.slug == ref
    return Question.category_id.in_(
        select(Category.id).where(Category.deleted_at.is_(None), by_ref)
    )


def _title_only(query: str, joiner: str = " & ") -> str:
    """The same prefix query restricted to the title's lexemes (weight A): every word
    (``" & "``) or any word (``" | "``)."""
    return joiner.join(f"{term}A" for term in query.split(" & "))


async def list_questions(
    session: AsyncSession,
    *,
    limit: int,
    after: list[Any] | None,
    q: str | None,
    category: str | None,
    status: str | None,
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """A page and the sort key of its last item when more follow (keyset pagination).

    With ``q``: every word must prefix-match; a question whose title holds every word ranks
    above one whose title holds some of them, which ranks above one that matches only through
    its answer; then ``ts_rank`` decides, then the id.
    """
    stmt = select(*PUBLIC_COLUMNS).where(LIVE)
    if category is not None:
        stmt = stmt.where(_category_filter(category))
    if status is not None:
        stmt = stmt.where(Question.status == status)
    if q is not None:
        query = prefix_query(q)
        if query is None:
            return [], None
        matches = tsquery(query)
        title_hit = case(
            (Question.search_vector.op("@@")(tsquery(_title_only(query))), literal(2.0)),
            (Question.search_vector.op("@@")(tsquery(_title_only(query, " | "))), literal(1.0)),
            else_=literal(0.0),
        )
        # rank/(rank+1) (normalization 32) stays below 1, so the title tiers always dominate.
        rank = cast(title_hit, Float(53)) + cast(
            func.ts_rank(Question.search_vector, matches, 32), Float(53)
        )
        stmt = stmt.add_columns(rank.label("rank")).where(Question.search_vector.op("@@")(matches))
        if after is not None:
            stmt = stmt.where(or_(rank < after[0], and_(rank == after[0], Question.id > after[1])))
        stmt = stmt.order_by(rank.desc(), Question.id)
    else:
        if after is not None:
            stmt = stmt.where(
                or_(
                    Question.sort_order > after[0],
                    and_(Question.sort_order == after[0], Question.id > after[1]),
                )
            )
        stmt = stmt.order_by(Question.sort_order, Question.id)
    rows = (await session.execute(stmt.limit(limit + 1))).all()
    page = rows[:limit]
    items = [question_public(r) for r in page]
    if len(rows) <= limit:
        return items, None
    last = page[-1]
    if q is not None:
        return items, [last.rank, last.id]
    return items, [last.sort_order, last.id]


async def list_revisions(
    session: AsyncSession, ref: str, *, limit: int, after: list[Any] | None
) -> tuple[list[dict[str, Any]], list[Any] | None]:
    """Revisions newest first. The sort key is [question id, number]: a cursor of another
    question's revisions is refused."""
    question = await _load(session, ref)
    stmt = select(QuestionRevision).where(QuestionRevision.question_id == question.id)
    if after is not None:
        if len(after) != 2 or after[0] != question.id or not isinstance(after[1], int):
            raise ValidationFailed(
                "The cursor is not valid.", details=field_error("cursor", "not valid")
            )
        stmt = stmt.where(QuestionRevision.number < after[1])
    rows = list(
        (await session.execute(stmt.order_by(QuestionRevision.number.desc()).limit(limit + 1)))
        .scalars()
        .all()
    )
    page = rows[:limit]
    items = [revision_public(r) for r in page]
    if len(rows) <= limit:
        return items, None
    return items, [question.id, page[-1].number]


# ---- rules shared by create, PATCH, restore and the sweep ----------------------------------


async def _category_id(session: AsyncSession, ref: str) -> str:
    """A live category of the org, locked against a concurrent delete (KEY SHARE)."""
    found = None
    if looks_like_id(ref, "cat"):
        found = (
            await session.execute(
                select(Category.id)
                .where(Category.id == ref, Category.deleted_at.is_(None))
                .with_for_update(key_share=True)
            )
        ).scalar_one_or_none()
    if found is None:
        raise CategoryReferenceNotFound(
            "The category does not exist in this organization.",
            details=field_error("categoryId", "not found"),
        )
    return found


def _not_with_schedule(status: str) -> ValidationFailed:
    return ValidationFailed(
        f"A {status} question cannot have scheduledPublishAt.",
        details=field_error("scheduledPublishAt", f"must be null when status is {status}"),
    )


def _needs_schedule() -> ValidationFailed:
    return ValidationFailed(
        "A scheduled question needs scheduledPublishAt.",
        details=field_error("scheduledPublishAt", "required when status is scheduled"),
    )


def _state_on_create(status: str, at: datetime | None) -> tuple[str, datetime | None]:
    if status in (PUBLISHED, "archived"):
        if at is not None:
            raise _not_with_schedule(status)
        return status, None
    if status == SCHEDULED and at is None:
        raise _needs_schedule()
    return (SCHEDULED, at) if at is not None else (DRAFT, None)


_UNSET: Any = object()


def _state_on_update(
    current_status: str, current_at: datetime | None, status: str | None, at: Any
) -> tuple[str, datetime | None]:
    """CONTRACT section 5. A status sent is the state the question moves to (SPEC); a draft
    sent with a time is scheduled; without ``status``, a time schedules a draft and null
    unschedules."""
    if status is not None:
        if status == SCHEDULED:
            when = current_at if at is _UNSET else at
            if when is None:
                raise _needs_schedule()
            return SCHEDULED, when
        if status in (PUBLISHED, "archived"):
            if at is not _UNSET and at is not None:
                raise _not_with_schedule(status)
            return status, None
        # draft
        when = None if at is _UNSET else at
        return (SCHEDULED, when) if when is not None else (DRAFT, None)
    if at is _UNSET:
        return current_status, current_at
    if at is None:
        return (DRAFT if current_status == SCHEDULED else current_status), None
    if current_status in (PUBLISHED, "archived"):
        raise _not_with_schedule(current_status)
    return SCHEDULED, at


async def note_scheduled(session: AsyncSession, org_id: str, at: datetime) -> None:
    """Keep the org's next due time at most ``at`` (the sweep recomputes it exactly)."""
    stmt = pg_insert(PublishSchedule).values(org_id=org_id, next_due_at=at)
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=[PublishSchedule.org_id],
            set_={
                "next_due_at": func.least(PublishSchedule.next_due_at, stmt.excluded.next_due_at)
            },
        )
    )


async def _prune_revisions(session: AsyncSession, question_ids: list[str]) -> None:
    """Keep the 50 newest revisions of each question."""
    if not question_ids:
        return
    await session.execute(
        delete(QuestionRevision).where(
            QuestionRevision.question_id == Question.id,
            Question.id.in_(question_ids),
            QuestionRevision.number <= Question.revision_count - REVISIONS_KEPT,
        )
    )


async def _add_revision(
    session: AsyncSession,
    question_id: str,
    number: int,
    actor: Actor,
    changed: list[str],
    before: dict[str, Any],
    now: datetime,
) -> None:
    await session.execute(
        insert(QuestionRevision).values(
            id=new_id("rev"),
            question_id=question_id,
            number=number,
            actor=actor,
            changed_fields=changed,
            snapshot=snapshot_of(before),
            created_at=now,
        )
    )


async def _emit_changes(
    session: AsyncSession, org_id: str, before: dict[str, Any], after: dict[str, Any]
) -> None:
    events = ["question.updated"]
    if after["status"] == PUBLISHED and before["status"] != PUBLISHED:
        events.append("question.published")
    elif before["status"] == PUBLISHED and after["status"] != PUBLISHED:
        events.append("question.unpublished")
    await record_events(session, org_id, [(event, after) for event in events])


# ---- idempotency of creates ----------------------------------------------------------------


@dataclass(frozen=True)
class Created:
    """A create's response: fresh, or the stored first response of its idempotency key."""

    status: int
    body: dict[str, Any]
    replayed: bool = False


async def _claim_key(session: AsyncSession, key: str, request_hash: str) -> Created | None:
    """Own ``key`` for this request (None), or the stored response to replay.

    The INSERT waits on the unique index while a concurrent request with the same key is in
    flight, then sees its committed row (or none, if it failed and rolled back)."""
    table = IdempotencyKey.__table__
    for _ in range(5):
        now = utcnow()
        claimed = (
            await session.execute(
                pg_insert(IdempotencyKey)
                .values(key=key, request_hash=request_hash, created_at=now)
                .on_conflict_do_nothing(index_elements=[IdempotencyKey.key])
                .returning(IdempotencyKey.key)
            )
        ).first()
        if claimed is not None:
            return None
        row = (await session.execute(select(table).where(table.c.key == key))).first()
        if row is None:
            continue  # purged between the two statements
        if row.created_at < now - IDEMPOTENCY_TTL:
            # Expired keys count as absent: take the row over (only one taker wins).
            taken = (
                await session.execute(
                    update(IdempotencyKey)
                    .where(
                        IdempotencyKey.key == key,
                        IdempotencyKey.created_at < now - IDEMPOTENCY_TTL,
                    )
                    .values(
                        request_hash=request_hash,
                        created_at=now,
                        response_status=None,
                        response_body=None,
                    )
                    .returning(IdempotencyKey.key)
                )
            ).first()
            if taken is not None:
                return None
            continue
        if row.request_hash != request_hash:
            raise IdempotencyKeyReused(
                details=field_error("X-Idempotency-Key", "used with a different body")
            )
        if row.response_status is not None and row.response_body is not None:
            return Created(row.response_status, _as_sent(row.response_body), replayed=True)
    raise ServiceUnavailable("The idempotency key is busy; retry.")


def _as_sent(stored: dict[str, Any]) -> dict[str, Any]:
    """JSONB reorders object keys: put them back in the order of the first response, so the
    replay is the same bytes, not only the same JSON."""
    data = stored["data"]
    return {"data": {name: data[name] for name in PUBLIC_FIELDS if name in data}}


async def _store_response(session: AsyncSession, key: str, created: Created) -> None:
    await session.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.key == key)
        .values(response_status=created.status, response_body=created.body)
    )


# ---- writing -------------------------------------------------------------------------------


async def _count_live(session: AsyncSession) -> int:
    return (await session.execute(select(func.count()).where(LIVE))).scalar_one()


async def create_question(
    session: AsyncSession,
    org: OrgContext,
    body: QuestionCreate,
    *,
    idempotency_key: str | None = None,
    request_hash: str = "",
) -> Created:
    if body.slug is not None:
        SLUGS.check_manual(body.slug)
    status, scheduled_at = _state_on_create(body.status, body.scheduled_publish_at)
    if idempotency_key is not None:
        replay = await _claim_key(session, idempotency_key, request_hash)
        if replay is not None:
            return replay
    category_id = await _category_id(session, body.category_id)

    async def count() -> int:
        return await _count_live(session)

    await ensure_room(session, org.id, org.plan, "questions", count)
    now = utcnow()
    row = await SLUGS.insert(
        session,
        {
            "id": new_id("q"),
            "slug": body.slug,
            "title": body.title,
            "answer": body.answer,
            "status": status,
            "category_id": category_id,
            "sort_order": body.order,
            "published_at": now if status == PUBLISHED else None,
            "scheduled_publish_at": scheduled_at,
            "search_vector": weighted_vector(body.title, body.answer),
            "revision_count": 0,
            "created_at": now,
            "updated_at": now,
        },
        manual_slug=body.slug,
        text=body.title,
        returning=PUBLIC_COLUMNS,
    )
    public = question_public(row)
    events = ["question.created"] + (["question.published"] if status == PUBLISHED else [])
    await record_events(session, org.id, [(event, public) for event in events])
    if scheduled_at is not None:
        await note_scheduled(session, org.id, scheduled_at)
    created = Created(201, {"data": public})
    if idempotency_key is not None:
        await _store_response(session, idempotency_key, created)
    return created


COLUMNS = {
    "title": "title",
    "answer": "answer",
    "categoryId": "category_id",
    "status": "status",
    "slug": "slug",
    "order": "sort_order",
    "scheduledPublishAt": "scheduled_publish_at",
    "publishedAt": "published_at",
}
NOT_NULL = ("title", "answer", "categoryId", "status", "slug", "order")


async def _apply(
    session: AsyncSession, org: OrgContext, question: Question, changes: dict[str, Any]
) -> dict[str, Any]:
    """One PATCH on a locked question: new values, one revision, the events of the change."""
    for field in NOT_NULL:
        if field in changes and changes[field] is None:
            raise ValidationFailed(details=field_error(field, "must not be null"))
    before = question_public(question)
    new: dict[str, Any] = {}
    for field in ("title", "answer", "order"):
        if field in changes:
            new[COLUMNS[field]] = changes[field]
    if "slug" in changes and changes["slug"] != question.slug:
        SLUGS.check_manual(changes["slug"])
        new["slug"] = changes["slug"]
    if "categoryId" in changes and changes["categoryId"] != question.category_id:
        new["category_id"] = await _category_id(session, changes["categoryId"])
    status, scheduled_at = _state_on_update(
        question.status,
        question.scheduled_publish_at,
        changes.get("status"),
        changes.get("scheduledPublishAt", _UNSET),
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
        values_["search_vector"] = weighted_vector(
            new.get("title", question.title), new.get("answer", question.answer)
        )
    try:
        async with session.begin_nested():
            row = (
                await session.execute(
                    update(Question)
                    .where(Question.id == question.id)
                    .values(**values_)
                    .returning(*Question.__table__.c)
                )
            ).one()
    except IntegrityError as exc:
        if SLUGS.is_conflict(exc):
            raise SlugConflict() from None
        raise
    await _add_revision(session, question.id, number, org.actor, changed, before, now)
    if number > REVISIONS_KEPT:
        await _prune_revisions(session, [question.id])
    after = question_public(row)
    if new:
        await _emit_changes(session, org.id, before, after)
    if "scheduled_publish_at" in new and scheduled_at is not None:
        await note_scheduled(session, org.id, scheduled_at)
    return after


async def update_question(
    session: AsyncSession, org: OrgContext, ref: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """PATCH: ``changes`` maps the client's field names to the values sent. The row lock
    serializes concurrent PATCHes, so none loses its revision."""
    return await _apply(session, org, await _load(session, ref, lock=True), changes)


async def restore_revision(
    session: AsyncSession, org: OrgContext, ref: str, revision_id: str
) -> dict[str, Any]:
    """Apply a revision's snapshot as a new PATCH (which writes its own revision)."""
    question = await _load(session, ref, lock=True)
    revision = (
        await session.execute(
            select(QuestionRevision).where(
                QuestionRevision.id == revision_id, QuestionRevision.question_id == question.id
            )
        )
    ).scalar_one_or_none()
    if revision is None:
        raise RevisionNotFound()
    changes = dict(revision.snapshot)
    if changes.get("scheduledPublishAt") is not None:
        changes["scheduledPublishAt"] = datetime.fromisoformat(changes["scheduledPublishAt"])
    return await _apply(session, org, question, changes)


async def delete_question(session: AsyncSession, org: OrgContext, ref: str) -> None:
    """Soft delete: invisible at once, its slug free; purged after 30 days."""
    question = await _load(session, ref, lock=True)
    before = question_public(question)
    await session.execute(
        update(Question).where(Question.id == question.id).values(deleted_at=utcnow())
    )
    await record_event(session, org.id, "question.deleted", before)


async def reorder_questions(session: AsyncSession, org: OrgContext, ids: list[str]) -> int:
    """Index i becomes order i, all or nothing. Each question whose order changes gets a
    revision and a ``question.updated`` event."""
    if len(set(ids)) != len(ids):
        raise ValidationErrorCode(
            "The ids list has duplicates.", details=field_error("ids", "duplicate ids")
        )
    current = {
        q.id: q
        for q in (
            await session.execute(
                select(Question)
                .where(LIVE, Question.id.in_(ids))
                .order_by(Question.id)
                .with_for_update()
            )
        ).scalars()
    }
    unknown = [i for i in ids if i not in current]
    if unknown:
        raise ValidationErrorCode(
            "Some ids are not questions of this organization; nothing was reordered.",
            details=[{"field": "ids", "issue": f"unknown id {i}"} for i in unknown[:20]],
        )
    changed = {i: n for n, i in enumerate(ids) if current[i].sort_order != n}
    if not changed:
        return len(ids)
    now = utcnow()
    befores = {i: question_public(current[i]) for i in changed}
    new_orders = values(column("id", String), column("position", Integer), name="new_orders").data(
        list(changed.items())
    )
    rows = (
        await session.execute(
            update(Question)
            .where(Question.id == new_orders.c.id)
            .values(
                sort_order=new_orders.c.position,
                updated_at=now,
                revision_count=Question.revision_count + 1,
            )
            .returning(*Question.__table__.c)
        )
    ).all()
    rows = sorted(rows, key=lambda r: r.id)
    await session.execute(
        insert(QuestionRevision),
        [
            {
                "id": new_id("rev"),
                "question_id": r.id,
                "number": r.revision_count,
                "actor": org.actor,
                "changed_fields": ["order"],
                "snapshot": snapshot_of(befores[r.id]),
                "created_at": now,
            }
            for r in rows
        ],
    )
    await _prune_revisions(session, [r.id for r in rows if r.revision_count > REVISIONS_KEPT])
    for r in rows:
        await record_event(session, org.id, "question.updated", question_public(r))
    return len(ids)


async def move_to_category(
    session: AsyncSession, org: OrgContext, from_category_id: str, to_category_id: str
) -> int:
    """Move every live question of one category to another (category merge and forced delete):
    each moved question is locked, gets a revision and a ``question.updated`` event."""
    current = {
        q.id: q
        for q in (
            await session.execute(
                select(Question)
                .where(LIVE, Question.category_id == from_category_id)
                .order_by(Question.id)
                .with_for_update()
            )
        ).scalars()
    }
    if not current:
        return 0
    now = utcnow()
    befores = {i: question_public(q) for i, q in current.items()}
    rows = (
        await session.execute(
            update(Question)
            .where(Question.id.in_(list(current)))
            .values(
                category_id=to_category_id,
                updated_at=now,
                revision_count=Question.revision_count + 1,
            )
            .returning(*Question.__table__.c)
        )
    ).all()
    rows = sorted(rows, key=lambda r: r.id)
    await session.execute(
        insert(QuestionRevision),
        [
            {
                "id": new_id("rev"),
                "question_id": r.id,
                "number": r.revision_count,
                "actor": org.actor,
                "changed_fields": ["categoryId"],
                "snapshot": snapshot_of(befores[r.id]),
                "created_at": now,
            }
            for r in rows
        ],
    )
    await _prune_revisions(session, [r.id for r in rows if r.revision_count > REVISIONS_KEPT])
    for r in rows:
        await record_event(session, org.id, "question.updated", question_public(r))
    return len(rows)


# ---- the publish sweep and the purge (run by actors in tasks/) ------------------------------


async def publish_due(session: AsyncSession, org_id: str, actor: Actor) -> int:
    """Publish this org's due scheduled questions (rows another sweep holds are skipped), then
    recompute the org's next due time. The caller holds the org's schedule row and commits."""
    now = utcnow()
    due = (
        (
            await session.execute(
                select(Question)
                .where(LIVE, Question.status == SCHEDULED, Question.scheduled_publish_at <= now)
                .order_by(Question.scheduled_publish_at, Question.id)
                .with_for_update(skip_locked=True)
            )
        )
        .scalars()
        .all()
    )
    for question in due:
        before = question_public(question)
        number = question.revision_count + 1
        row = (
            await session.execute(
                update(Question)
                .where(Question.id == question.id)
                .values(
                    status=PUBLISHED,
                    published_at=now,
                    scheduled_publish_at=None,
                    updated_at=now,
                    revision_count=number,
                )
                .returning(*Question.__table__.c)
            )
        ).one()
        await _add_revision(
            session,
            question.id,
            number,
            actor,
            ["status", "scheduledPublishAt", "publishedAt"],
            before,
            now,
        )
        after = question_public(row)
        await record_event(session, org_id, "question.published", after)
        await record_event(session, org_id, "question.updated", after)
    await _prune_revisions(session, [q.id for q in due if q.revision_count >= REVISIONS_KEPT])
    next_due = (
        await session.execute(
            select(func.min(Question.scheduled_publish_at)).where(
                LIVE, Question.status == SCHEDULED
            )
        )
    ).scalar_one()
    if next_due is None:
        await session.execute(delete(PublishSchedule).where(PublishSchedule.org_id == org_id))
    else:
        await session.execute(
            update(PublishSchedule)
            .where(PublishSchedule.org_id == org_id)
            .values(next_due_at=next_due)
        )
    return len(due)


async def purge_expired(session: AsyncSession, deleted_before: datetime) -> dict[str, int]:
    """Remove questions soft-deleted before ``deleted_before`` and expired idempotency keys."""
    questions = (
        await session.execute(
            delete(Question)
            .where(Question.deleted_at.is_not(None), Question.deleted_at < deleted_before)
            .returning(Question.id)
        )
    ).all()
    keys = (
        await session.execute(
            delete(IdempotencyKey)
            .where(IdempotencyKey.created_at < utcnow() - IDEMPOTENCY_TTL)
            .returning(IdempotencyKey.key)
        )
    ).all()
    return {"questions": len(questions), "idempotencyKeys": len(keys)}
