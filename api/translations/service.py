"""Translations of questions and categories: one per resource and locale (issue 15).

The writers (``write_question_translation``, ``write_category_translation``) are validate-free:
callers (the PUT routes, the XLIFF import) have checked lengths and the locale. Each upserts the
row with the digest of the resource's current source fields (so ``outdated`` is false right
after a write), indexes the text through ``api.search.text_vector`` in the translation's locale,
and records its event in the caller's transaction with its entry of the org's audit log (under
its question or category: ``translation_updated`` / ``translation_deleted``, ``before`` and
``after`` the whole translation or null; a category's also in the category audit). Nothing here
commits: the request (or the actor) owns the transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Row, delete, literal_column, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.categories.service import LIVE as CATEGORY_LIVE
from api.errors import CategoryNotFound, TranslationNotFound, ValidationFailed, field_error
from api.locales import canonical_tag
from api.questions.models import Question
from api.questions.queries import load as load_question
from api.reviews.errors import MemberRequired, ReviewRequired, SelfApproval
from api.reviews.workflow import require_review
from api.search import text_vector
from api.settings.service import ensure_locale_enabled
from api.translations.models import CategoryTranslation, QuestionTranslation, source_digest
from tenancy.audit import AUDIT_EVENT, audit_payload, record_audit
from tenancy.clock import iso, utcnow
from tenancy.ids import looks_like_id
from tenancy.outbox import record_events
from tenancy.principal import Principal

DRAFT = "draft"
PUBLISHED = "published"
QUESTION_UPDATED = "question.translation.updated"
QUESTION_DELETED = "question.translation.deleted"
CATEGORY_UPDATED = "category.translation.updated"
CATEGORY_DELETED = "category.translation.deleted"
# Audit actions of translation writes (CONTRACT section 4's entry shape; `before` and `after`
# are the whole translation, null when it did not exist / no longer exists), in the category
# audit (a category's) and in the org's audit log (under the question or the category).
AUDIT_UPDATED = "translation_updated"
AUDIT_DELETED = "translation_deleted"


# ---- the public shape ----------------------------------------------------------------------


def translation_public(row: Any, current_digest: str) -> dict[str, Any]:
    """The Translation as GET returns it (also inside its events' ``data``): a question's has
    ``title``, ``answer`` and ``status``, a category's ``name`` and ``description``.
    ``outdated``: the source changed since the translation was last written."""
    mapping = row._mapping if isinstance(row, Row) else None

    def has(name: str) -> bool:
        return name in mapping if mapping is not None else hasattr(row, name)

    out: dict[str, Any] = {"locale": row.locale}
    if has("title"):
        out.update(title=row.title, answer=row.answer, status=row.status)
    else:
        out.update(name=row.name, description=row.description)
    out.update(
        outdated=row.source_digest != current_digest,
        createdAt=iso(row.created_at),
        updatedAt=iso(row.updated_at),
    )
    return out


def question_digest(question: Any) -> str:
    return source_digest(question.title, question.answer)


def category_digest(category: Any) -> str:
    return source_digest(category.name, category.description)


# ---- the locale of a translation -----------------------------------------------------------


def translation_locale(org: Principal, resource_locale: str, locale: str) -> str:
    """``locale`` in canonical case when it names an enabled locale other than the resource's
    own; else 400 ``validation_failed`` on field ``locale``."""
    tag = canonical_tag(locale)
    if tag is None:
        raise ValidationFailed(
            "The locale is not a known BCP 47 tag.", details=field_error("locale", "unknown tag")
        )
    if tag not in org.locales:
        raise ValidationFailed(
            f"The locale {tag} is not enabled for this organization (see /settings).",
            details=field_error("locale", "not enabled"),
        )
    if tag == resource_locale:
        raise ValidationFailed(
            f"{tag} is the resource's own locale: edit the resource itself.",
            details=field_error("locale", "is the resource's own locale"),
        )
    return tag


# ---- writers -------------------------------------------------------------------------------

# PostgreSQL: a row an upsert inserted has xmax 0; one it updated has the updater's id.
_CREATED: ColumnElement[bool] = literal_column("xmax = 0").label("created")


async def write_question_translation(
    session: AsyncSession,
    org: Principal,
    question_id: str,
    locale: str,
    fields: dict[str, Any],
    status: str | None,
    digest: str,
) -> tuple[dict[str, Any], bool]:
    """Create or replace the question's translation in ``locale`` (``fields``: ``title``,
    ``answer``); ``status`` None keeps an existing row's status (a new row is a draft).
    ``digest``: of the question's current source fields (the caller has read them; locked or
    not, a source changed after this read makes the translation outdated, as it should).
    Returns (Translation, created?)."""
    org.require("write")
    await ensure_locale_enabled(session, org, locale)
    held = (
        await session.execute(
            select(*_question_columns(), QuestionTranslation.author)
            .where(QuestionTranslation.question_id == question_id)
            .where(QuestionTranslation.locale == locale)
            .with_for_update()
        )
    ).one_or_none()
    before = translation_public(held, digest) if held is not None else None
    now = utcnow()
    title, answer = fields["title"], fields["answer"]
    rewritten = held is None or (held.title, held.answer) != (title, answer)
    await _check_review(session, org, held, rewritten, status)
    values = {
        "title": title,
        "answer": answer,
        "source_digest": digest,
        "search_vector": text_vector(locale, title, answer),
        "updated_at": now,
    }
    if rewritten:
        values["author"] = org.author
    updates = dict(values)
    if status is not None:
        updates["status"] = status
    stmt = (
        insert(QuestionTranslation)
        .values(
            question_id=question_id, locale=locale, status=status or DRAFT, created_at=now, **values
        )
        .on_conflict_do_update(
            index_elements=[QuestionTranslation.question_id, QuestionTranslation.locale],
            set_=updates,
        )
        .returning(*_question_columns(), _CREATED)
    )
    row = (await session.execute(stmt)).one()
    public = translation_public(row, digest)
    await record_events(
        session,
        org.id,
        [
            (QUESTION_UPDATED, {"questionId": question_id, "translation": public}),
            _audit(org, "question", question_id, AUDIT_UPDATED, before, public),
        ],
    )
    return public, bool(row.created)


async def _check_review(
    session: AsyncSession, org: Principal, held: Any, rewritten: bool, status: str | None
) -> None:
    """With review required, a translation reaches readers as questions do (issue 40): its
    text is published unchanged by a member with the review scope who did not write it.
    Changing a published translation's text, or publishing new text in the same write, is
    403 ``review_required``; publishing one's own text is 403 ``self_approval``."""
    now_published = held is not None and held.status == PUBLISHED
    becomes = status if status is not None else (held.status if held is not None else DRAFT)
    if becomes != PUBLISHED or (now_published and not rewritten):
        return
    if not await require_review(session):
        return
    if rewritten or not org.may("review"):
        raise ReviewRequired()
    if org.member_id is None:
        raise MemberRequired()
    if held.author is not None and held.author == org.author:
        raise SelfApproval()


async def write_category_translation(
    session: AsyncSession,
    org: Principal,
    category_id: str,
    locale: str,
    fields: dict[str, Any],
    digest: str,
) -> tuple[dict[str, Any], bool]:
    """Create or replace the category's translation in ``locale`` (``fields``: ``name``,
    ``description`` (may be absent or None)), with its audit entry. ``digest``: of the
    category's current source fields. Returns (Translation, created?)."""
    await ensure_locale_enabled(session, org, locale)
    before = await _locked_before(
        session, _category_columns(), CategoryTranslation.category_id == category_id, locale, digest
    )
    now = utcnow()
    name, description = fields["name"], fields.get("description")
    values = {
        "name": name,
        "description": description,
        "source_digest": digest,
        "search_vector": text_vector(locale, name, description),
        "updated_at": now,
    }
    stmt = (
        insert(CategoryTranslation)
        .values(category_id=category_id, locale=locale, created_at=now, **values)
        .on_conflict_do_update(
            index_elements=[CategoryTranslation.category_id, CategoryTranslation.locale],
            set_=values,
        )
        .returning(*_category_columns(), _CREATED)
    )
    row = (await session.execute(stmt)).one()
    public = translation_public(row, digest)
    await record_audit(
        session,
        resource_type="category",
        resource_id=category_id,
        action=AUDIT_UPDATED,
        actor=org.actor,
        before=before,
        after=public,
    )
    await record_events(
        session,
        org.id,
        [
            (CATEGORY_UPDATED, {"categoryId": category_id, "translation": public}),
            _audit(org, "category", category_id, AUDIT_UPDATED, before, public),
        ],
    )
    return public, bool(row.created)


async def _locked_before(
    session: AsyncSession,
    columns: tuple[Any, ...],
    of_resource: ColumnElement[bool],
    locale: str,
    digest: str,
) -> dict[str, Any] | None:
    """The translation a write replaces (its audit ``before``), row-locked; None if none."""
    locale_column = columns[0]  # ``_question_columns`` and ``_category_columns`` start with it
    row = (
        await session.execute(
            select(*columns).where(of_resource, locale_column == locale).with_for_update()
        )
    ).one_or_none()
    return translation_public(row, digest) if row is not None else None


def _audit(
    org: Principal, resource: str, resource_id: str, action: str, before: Any, after: Any
) -> tuple[str, dict[str, Any]]:
    """The ``audit`` outbox event of a translation write, recorded with its other event."""
    data = audit_payload(
        resource=resource,
        resource_id=resource_id,
        action=action,
        actor=org.actor,
        before=before,
        after=after,
    )
    return AUDIT_EVENT, data


def _question_columns() -> tuple[Any, ...]:
    t = QuestionTranslation
    return (t.locale, t.title, t.answer, t.status, t.source_digest, t.created_at, t.updated_at)


def _category_columns() -> tuple[Any, ...]:
    t = CategoryTranslation
    return (t.locale, t.name, t.description, t.source_digest, t.created_at, t.updated_at)


# ---- the routes' service calls: resource by id or slug, locale checked ---------------------


async def _question(session: AsyncSession, ref: str) -> Question:
    return await load_question(session, ref)


async def _category(session: AsyncSession, ref: str) -> Category:
    by_ref = Category.id == ref if looks_like_id(ref, "cat") else Category.slug == ref
    category = (
        await session.execute(select(Category).where(CATEGORY_LIVE, by_ref))
    ).scalar_one_or_none()
    if category is None:
        raise CategoryNotFound()
    return category


async def list_question_translations(session: AsyncSession, ref: str) -> list[dict[str, Any]]:
    question = await _question(session, ref)
    digest = question_digest(question)
    rows = await session.execute(
        select(*_question_columns())
        .where(QuestionTranslation.question_id == question.id)
        .order_by(QuestionTranslation.locale)
    )
    return [translation_public(r, digest) for r in rows]


async def get_question_translation(
    session: AsyncSession, org: Principal, ref: str, locale: str
) -> dict[str, Any]:
    question = await _question(session, ref)
    tag = translation_locale(org, question.locale, locale)
    row = (
        await session.execute(
            select(*_question_columns()).where(
                QuestionTranslation.question_id == question.id, QuestionTranslation.locale == tag
            )
        )
    ).one_or_none()
    if row is None:
        raise TranslationNotFound()
    return translation_public(row, question_digest(question))


async def put_question_translation(
    session: AsyncSession,
    org: Principal,
    ref: str,
    locale: str,
    fields: dict[str, Any],
    status: str | None,
) -> tuple[dict[str, Any], bool]:
    question = await _question(session, ref)
    tag = translation_locale(org, question.locale, locale)
    return await write_question_translation(
        session, org, question.id, tag, fields, status, question_digest(question)
    )


async def delete_question_translation(
    session: AsyncSession, org: Principal, ref: str, locale: str
) -> None:
    question = await _question(session, ref)
    tag = translation_locale(org, question.locale, locale)
    row = (
        await session.execute(
            delete(QuestionTranslation)
            .where(QuestionTranslation.question_id == question.id)
            .where(QuestionTranslation.locale == tag)
            .returning(*_question_columns())
        )
    ).one_or_none()
    if row is None:
        raise TranslationNotFound()
    public = translation_public(row, question_digest(question))
    await record_events(
        session,
        org.id,
        [
            (QUESTION_DELETED, {"questionId": question.id, "translation": public}),
            _audit(org, "question", question.id, AUDIT_DELETED, public, None),
        ],
    )


async def list_category_translations(session: AsyncSession, ref: str) -> list[dict[str, Any]]:
    category = await _category(session, ref)
    digest = category_digest(category)
    rows = await session.execute(
        select(*_category_columns())
        .where(CategoryTranslation.category_id == category.id)
        .order_by(CategoryTranslation.locale)
    )
    return [translation_public(r, digest) for r in rows]


async def get_category_translation(
    session: AsyncSession, org: Principal, ref: str, locale: str
) -> dict[str, Any]:
    category = await _category(session, ref)
    tag = translation_locale(org, category.locale, locale)
    row = (
        await session.execute(
            select(*_category_columns()).where(
                CategoryTranslation.category_id == category.id, CategoryTranslation.locale == tag
            )
        )
    ).one_or_none()
    if row is None:
        raise TranslationNotFound()
    return translation_public(row, category_digest(category))


async def put_category_translation(
    session: AsyncSession, org: Principal, ref: str, locale: str, fields: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    category = await _category(session, ref)
    tag = translation_locale(org, category.locale, locale)
    return await write_category_translation(
        session, org, category.id, tag, fields, category_digest(category)
    )


async def delete_category_translation(
    session: AsyncSession, org: Principal, ref: str, locale: str
) -> None:
    category = await _category(session, ref)
    tag = translation_locale(org, category.locale, locale)
    row = (
        await session.execute(
            delete(CategoryTranslation)
            .where(CategoryTranslation.category_id == category.id)
            .where(CategoryTranslation.locale == tag)
            .returning(*_category_columns())
        )
    ).one_or_none()
    if row is None:
        raise TranslationNotFound()
    public = translation_public(row, category_digest(category))
    await record_audit(
        session,
        resource_type="category",
        resource_id=category.id,
        action=AUDIT_DELETED,
        actor=org.actor,
        before=public,
        after=None,
    )
    await record_events(
        session,
        org.id,
        [
            (CATEGORY_DELETED, {"categoryId": category.id, "translation": public}),
            _audit(org, "category", category.id, AUDIT_DELETED, public, None),
        ],
    )
