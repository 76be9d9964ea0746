"""Category rules (SPEC "Categories", CONTRACT section 4). Services never commit: the request
owns the transaction. Every mutation writes its audit entry and its events in that transaction.

Changes to the hierarchy (a create or PATCH naming a parent, a merge, a delete) take one
per-org transaction advisory lock first, before any row lock, so their checks (the parent is
live, no cycle, the target is not inside the source) see a tree no one else is changing: two
crossed PATCHes never make a cycle, and no category lands under a parent a concurrent merge or
delete removes. A create without a parent takes no lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    column,
    delete,
    func,
    insert,
    literal,
    select,
    text,
    update,
    values,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.service import checked_audiences
from api.audiences.visibility import refresh_audience_paths
from api.categories.models import Category
from api.categories.schemas import SLUG_MAX, CategoryCreate, category_public
from api.errors import (
    AudienceInUse,
    CategoryNotEmpty,
    CategoryNotFound,
    CategoryReferenceNotFound,
    DefaultCategoryProtected,
    SlugConflict,
    ValidationErrorCode,
    ValidationFailed,
    field_error,
)
from api.external_ids import external_id_column
from api.questions.bulk_updates import move_to_category
from api.questions.models import Question
from api.search import text_vector
from api.slugs import SlugRule
from billing.limits import ensure_room
from tenancy.audit import AUDIT_EVENT, audit_payload, record_audit
from tenancy.clock import utcnow
from tenancy.ids import looks_like_id, new_id
from tenancy.outbox import record_events
from tenancy.principal import Principal

LIVE = Category.deleted_at.is_(None)
# `merge`, `reorder` and `audit` are operations under /categories, never slugs.
OPERATIONS = frozenset({"merge", "reorder", "audit"})
SLUGS = SlugRule(Category, LIVE, SLUG_MAX, OPERATIONS, "uq_categories_slug_live")

# Issue 39: a delete or merge never moves content to where more readers may see it.
MOVES_WIDEN = "Its content would move where other readers may see it: move it or change audiences."

DEFAULT_SLUG = "uncategorized"
DEFAULT_NAME = "Uncategorized"


# ---- reading -------------------------------------------------------------------------------


def _question_count() -> ColumnElement[int]:
    return (
        select(func.count())
        .where(Question.category_id == Category.id, Question.deleted_at.is_(None))
        .correlate(Category)
        .scalar_subquery()
    )


def _with_count() -> Select[Category, int, str | None]:
    """The live categories with their question counts and external ids (issue 29)."""
    count = _question_count().label("question_count")
    return select(Category, count, external_id_column("category", Category.id)).where(LIVE)


async def _public(session: AsyncSession, category: Category) -> dict[str, Any]:
    count = select(func.count()).where(
        Question.category_id == category.id, Question.deleted_at.is_(None)
    )
    row = (
        await session.execute(
            select(count.scalar_subquery(), external_id_column("category", literal(category.id)))
        )
    ).one()
    return category_public(category, row[0], row[1])


def _by_ref(ref: str) -> ColumnElement[bool]:
    return Category.id == ref if looks_like_id(ref, "cat") else Category.slug == ref


async def _load(session: AsyncSession, ref: str, *, lock: bool = False) -> Category:
    stmt = select(Category).where(LIVE, _by_ref(ref))
    if lock:
        # FOR UPDATE (not NO KEY UPDATE): it waits for the creates and moves of questions
        # into this category, which hold it FOR KEY SHARE (``questions.rules.category_id``),
        # so a delete never leaves a question under a deleted category. Merge does the same.
        stmt = stmt.with_for_update()
    category = (await session.execute(stmt)).scalar_one_or_none()
    if category is None:
        raise CategoryNotFound()
    return category


async def get_category(session: AsyncSession, ref: str) -> dict[str, Any]:
    row = (await session.execute(_with_count().where(_by_ref(ref)))).first()
    if row is None:
        raise CategoryNotFound()
    return category_public(row.Category, row.question_count, row.external_id)


# ---- writing -------------------------------------------------------------------------------


async def _audit(
    session: AsyncSession,
    org: Principal,
    action: str,
    category_id: str | None,
    before: Any,
    after: Any,
) -> tuple[str, dict[str, Any]]:
    """Write the category audit's entry (read-your-writes, this transaction) and return the
    org audit log's event, for the caller to record with its webhook events (one statement)."""
    await record_audit(
        session,
        resource_type="category",
        resource_id=category_id,
        action=action,
        actor=org.actor,
        before=before,
        after=after,
    )
    return AUDIT_EVENT, audit_payload(
        resource="category",
        resource_id=category_id,
        action=action,
        actor=org.actor,
        before=before,
        after=after,
    )


async def _lock_tree(session: AsyncSession, org: Principal) -> None:
    """Serialize this org's hierarchy changes until the transaction ends. Taken before any
    row lock (one order everywhere: no deadlock); the statements after it, in READ COMMITTED,
    see what the previous holder committed."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
        {"key": f"categories-tree:{org.id}"},
    )


async def _parent(session: AsyncSession, ref: str) -> Category:
    parent = (
        await session.execute(select(Category).where(LIVE, _by_ref(ref)))
    ).scalar_one_or_none()
    if parent is None:
        raise CategoryReferenceNotFound(
            "The parent category does not exist.", details=field_error("parentId", "not found")
        )
    return parent


async def _descendant_ids(session: AsyncSession, root_id: str) -> set[str]:
    """Ids of every live category below ``root_id`` (not itself)."""
    tree = select(Category.id).where(Category.parent_id == root_id, LIVE).cte(recursive=True)
    child = select(Category.id).where(Category.parent_id == tree.c.id, LIVE)
    tree = tree.union(child)
    return set((await session.execute(select(tree.c.id))).scalars())


async def _count_live(session: AsyncSession) -> int:
    return (await session.execute(select(func.count()).where(LIVE))).scalar_one()


async def create_category(
    session: AsyncSession, org: Principal, body: CategoryCreate, external_id: str | None = None
) -> dict[str, Any]:
    """``external_id``: the source item an import makes it of (its caller writes the
    reference in the same transaction); the response and the events show it."""
    if body.slug is not None:
        SLUGS.check_manual(body.slug)
    parent_id: str | None = None
    if body.parent_id:
        await _lock_tree(session, org)
        parent_id = (await _parent(session, body.parent_id)).id

    async def count() -> int:
        return await _count_live(session)

    await ensure_room(session, org.id, org.plan, "categories", count)
    now = utcnow()
    category_id = new_id("cat")
    await SLUGS.insert(
        session,
        {
            "id": category_id,
            "slug": body.slug,
            "locale": org.default_locale,
            "name": body.name,
            "description": body.description,
            "sort_order": body.order,
            "parent_id": parent_id,
            "is_default": False,
            "audiences": await checked_audiences(session, body.audiences, "audiences"),
            "search_vector": text_vector(org.default_locale, body.name, body.description),
            "created_at": now,
            "updated_at": now,
        },
        manual_slug=body.slug,
        text=body.name,
    )
    if parent_id is not None or body.audiences:
        await refresh_audience_paths(session)
    public = await get_category(session, category_id)
    if external_id is not None:
        public["externalId"] = external_id
    audit = await _audit(session, org, "created", category_id, None, public)
    await record_events(session, org.id, [("category.created", public), audit])
    return public


async def create_default_category(session: AsyncSession, locale: str = "en") -> None:
    """The org's default category, made with its schema (CONTRACT section 4), in the org's
    default locale."""
    now = utcnow()
    await session.execute(
        insert(Category).values(
            id=new_id("cat"),
            slug=DEFAULT_SLUG,
            locale=locale,
            name=DEFAULT_NAME,
            description=None,
            sort_order=0,
            parent_id=None,
            is_default=True,
            search_vector=text_vector(locale, DEFAULT_NAME, None),
            created_at=now,
            updated_at=now,
        )
    )


EDITABLE = {
    "name": "name",
    "slug": "slug",
    "description": "description",
    "order": "sort_order",
    "parentId": "parent_id",
    "audiences": "audiences",
}


async def update_category(
    session: AsyncSession, org: Principal, ref: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """PATCH: ``changes`` maps the client's field names to the values sent."""
    for field in ("name", "slug", "order"):
        if field in changes and changes[field] is None:
            raise ValidationFailed(details=field_error(field, "must not be null"))
    if changes.get("parentId") is not None:
        await _lock_tree(session, org)
    category = await _load(session, ref, lock=True)
    before_public = await _public(session, category)
    new_values: dict[str, Any] = {}
    for field, value in changes.items():
        column = EDITABLE[field]
        if field == "parentId" and value is not None:
            parent = await _parent(session, value)
            if parent.id == category.id or parent.id in await _descendant_ids(session, category.id):
                raise ValidationFailed(
                    "A category cannot be its own parent or descendant.",
                    details=field_error("parentId", "would create a cycle"),
                )
            value = parent.id
        if field == "slug" and value != category.slug:
            SLUGS.check_manual(value)
        if field == "audiences":
            if value is None:
                raise ValidationFailed(details=field_error(field, "must not be null"))
            value = await checked_audiences(session, value, "audiences")
        if getattr(category, column) != value:
            new_values[column] = value
    if not new_values:
        return before_public
    now = utcnow()
    new_values["updated_at"] = now
    if "name" in new_values or "description" in new_values:
        new_values["search_vector"] = text_vector(
            category.locale,
            new_values.get("name", category.name),
            new_values.get("description", category.description),
        )
    try:
        async with session.begin_nested():
            await session.execute(
                update(Category).where(Category.id == category.id).values(**new_values)
            )
    except IntegrityError as exc:
        if SLUGS.is_conflict(exc):
            raise SlugConflict() from None
        raise
    if "audiences" in new_values or "parent_id" in new_values:
        await refresh_audience_paths(session)
    after_public = await get_category(session, category.id)
    changed = [f for f in EDITABLE if EDITABLE[f] in new_values]
    audit = await _audit(
        session,
        org,
        "updated",
        category.id,
        {f: before_public[f] for f in changed},
        {f: after_public[f] for f in changed},
    )
    await record_events(session, org.id, [("category.updated", after_public), audit])
    return after_public


async def _emit_category_updates(
    session: AsyncSession,
    org: Principal,
    ids: Sequence[str],
    then: Sequence[tuple[str, dict[str, Any]]] = (),
) -> None:
    """``category.updated`` for each of ``ids``, then the events ``then``: one statement."""
    events: list[tuple[str, dict[str, Any]]] = []
    if ids:
        rows = (
            await session.execute(_with_count().where(Category.id.in_(ids)).order_by(Category.id))
        ).all()
        events = [
            ("category.updated", category_public(row.Category, row.question_count, row.external_id))
            for row in rows
        ]
    if events or then:
        await record_events(session, org.id, [*events, *then])


async def _default_category_id(session: AsyncSession) -> str:
    return (
        await session.execute(select(Category.id).where(Category.is_default, LIVE))
    ).scalar_one()


async def delete_category(session: AsyncSession, org: Principal, ref: str, force: bool) -> None:
    await _lock_tree(session, org)  # its children move to its parent
    category = await _load(session, ref, lock=True)
    if category.is_default:
        raise DefaultCategoryProtected()
    before_public = await _public(session, category)
    if before_public["questionCount"] > 0 and not force:
        raise CategoryNotEmpty()
    if category.audience_path and (
        before_public["questionCount"] > 0 or await _descendant_ids(session, category.id)
    ):
        raise AudienceInUse(MOVES_WIDEN)
    now = utcnow()
    default_id = await _default_category_id(session)
    await move_to_category(session, org, category.id, default_id)
    # Soft-deleted questions still pointing here move too (they are invisible: no events).
    await session.execute(
        update(Question).where(Question.category_id == category.id).values(category_id=default_id)
    )
    children = (
        await session.execute(
            update(Category)
            .where(Category.parent_id == category.id)
            .values(parent_id=category.parent_id, updated_at=now)
            .returning(Category.id, Category.deleted_at)
        )
    ).all()
    await session.execute(delete(Category).where(Category.id == category.id))
    await _emit_category_updates(session, org, [c.id for c in children if c.deleted_at is None])
    audit = await _audit(session, org, "deleted", category.id, before_public, None)
    await record_events(session, org.id, [("category.deleted", before_public), audit])


async def merge_categories(
    session: AsyncSession, org: Principal, source_id: str, target_id: str, delete_source: bool
) -> dict[str, Any]:
    if source_id == target_id:
        raise ValidationFailed(
            "sourceId and targetId must differ.", details=field_error("targetId", "equals sourceId")
        )
    await _lock_tree(session, org)
    found = {
        c.id: c
        for c in (
            await session.execute(
                select(Category)
                .where(LIVE, Category.id.in_([source_id, target_id]))
                .order_by(Category.id)
                .with_for_update()
            )
        ).scalars()
    }
    if source_id not in found:
        raise CategoryNotFound("The source category does not exist.")
    if target_id not in found:
        raise CategoryNotFound("The target category does not exist.")
    source = found[source_id]
    if source.is_default:
        raise DefaultCategoryProtected()
    if target_id in await _descendant_ids(session, source_id):
        raise ValidationFailed(
            "The target is inside the source's subtree.",
            details=field_error("targetId", "inside the source's subtree"),
        )
    if source.audience_path != found[target_id].audience_path:
        raise AudienceInUse(MOVES_WIDEN)
    before_public = await _public(session, source)
    now = utcnow()
    children = (
        (
            await session.execute(
                update(Category)
                .where(Category.parent_id == source_id, LIVE)
                .values(parent_id=target_id, updated_at=now)
                .returning(Category.id)
            )
        )
        .scalars()
        .all()
    )
    questions_moved = await move_to_category(session, org, source_id, target_id)
    if delete_source:
        await session.execute(
            update(Category).where(Category.id == source_id).values(deleted_at=now, updated_at=now)
        )
    result = {
        "childrenMoved": len(children),
        "questionsMoved": questions_moved,
        "sourceDeleted": delete_source,
    }
    audit = await _audit(
        session, org, "merged", source_id, before_public, {"targetId": target_id, **result}
    )
    deleted = [("category.deleted", before_public)] if delete_source else []
    await _emit_category_updates(session, org, list(children), then=[*deleted, audit])
    return result


async def reorder_categories(session: AsyncSession, org: Principal, ids: list[str]) -> int:
    if len(set(ids)) != len(ids):
        raise ValidationErrorCode(
            "The ids list has duplicates.", details=field_error("ids", "duplicate ids")
        )
    current = {
        row.id: row.sort_order
        for row in (
            await session.execute(
                select(Category.id, Category.sort_order)
                .where(LIVE, Category.id.in_(ids))
                .order_by(Category.id)
                .with_for_update()
            )
        ).all()
    }
    unknown = [i for i in ids if i not in current]
    if unknown:
        raise ValidationErrorCode(
            "Some ids are not categories of this organization; nothing was reordered.",
            details=[{"field": "ids", "issue": f"unknown id {i}"} for i in unknown[:20]],
        )
    changed = {i: n for n, i in enumerate(ids) if current[i] != n}
    if changed:
        new_orders = values(
            column("id", String), column("position", Integer), name="new_orders"
        ).data(list(changed.items()))
        await session.execute(
            update(Category)
            .where(Category.id == new_orders.c.id)
            .values(sort_order=new_orders.c.position, updated_at=utcnow())
        )
        audit = await _audit(
            session,
            org,
            "reordered",
            None,
            {i: current[i] for i in changed},
            changed,
        )
        await _emit_category_updates(session, org, list(changed), then=[audit])
    return len(ids)
