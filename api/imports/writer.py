"""Each parsed item written through the services an API write goes through (revisions,
audit entries, slugs, plan caps behave alike), in a savepoint of its own: a failing item is
reported (``{item, field, issue}``) and the others go on.

Re-running an import updates what it created: ``external_refs`` maps each item's source to the
resource made of it; a live resource is compared and updated (``updated``) or left
(``unchanged``); a deleted one is made again."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories import service as categories
from api.categories.models import Category
from api.categories.schemas import CategoryCreate
from api.errors import SlugConflict
from api.imports.audiences import write_audience
from api.imports.items import (
    AudienceItem,
    CategoryItem,
    Invalid,
    Item,
    Note,
    QuestionItem,
    SettingsItem,
    TranslationItem,
)
from api.imports.references import DeferredLink, References
from api.imports.report import Report, kind_of
from api.imports.source_times import SourceTimes
from api.locales import canonical_tag
from api.questions import service as questions
from api.questions.batch import NewQuestions
from api.questions.models import Question
from api.questions.queries import load
from api.questions.schemas import QuestionCreate
from api.settings.service import update_settings
from api.slugs import slugify, with_suffix
from api.translations import service as translations
from api.translations.models import CategoryTranslation, QuestionTranslation
from api.translations.schemas import CategoryTranslationBody, QuestionTranslationBody
from tenancy.errors import ServiceError
from tenancy.models import Organization
from tenancy.principal import Principal

SLUG_TRIES = 20
CATEGORY_SLUG_MAX = 100
QUESTION_SLUG_MAX = 200


class ItemFailed(Exception):
    def __init__(self, field: str, issue: str) -> None:
        super().__init__(issue)
        self.field = field
        self.issue = issue


def _status_of(question: Question) -> str:
    if question.status == "draft" and question.scheduled_publish_at is not None:
        return "scheduled"
    return question.status


def _failure(exc: Exception) -> tuple[str, str]:
    """The field and issue of an item's failure, as its report lists them."""
    if isinstance(exc, ItemFailed):
        return exc.field, exc.issue
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        return ".".join(str(p) for p in error["loc"]) or "item", error["msg"]
    assert isinstance(exc, ServiceError)
    return exc.details[0]["field"] if exc.details else "item", f"{exc.code}: {exc.message}"


class Writer(References):
    """Writes items for one org; remembers the categories it resolved (ids only)."""

    def __init__(self, org: Principal, report: Report) -> None:
        self.org = org
        self.report = report
        self._categories: dict[str, str] = {}  # source or name/slug -> category id
        self.touched: set[str] = set()  # ids written in the current transaction
        self._refs: dict[tuple[str, str], str | None] = {}  # this batch's sources, known
        self._pending: dict[tuple[str, str], str] = {}  # sources to remember at its end
        self._made = 0  # categories made by name (CSV, Markdown) in this batch
        self._new = NewQuestions()  # this batch's new questions, created together
        self._bulk = False  # True while a batch is written whole (not item by item)
        self.deferred: list[DeferredLink] = []  # links to targets not written yet
        self.times = SourceTimes()  # this batch's source times to keep

    # ---- a batch ----------------------------------------------------------------------------

    async def write_batch(self, session: AsyncSession, items: list[Item]) -> None:
        """The items in one savepoint, their sources read and written in one statement each;
        when any item fails, the savepoint is rolled back and the items written again, each
        in a savepoint of its own (so a failing item costs its batch, not the import)."""
        saved = (dict(self._categories), set(self.touched))
        deferred = len(self.deferred)
        outcomes: list[tuple[str, str, list[Note]]] = []
        try:
            self._bulk = True
            async with session.begin_nested():
                await self._prefetch(session, items)
                for item in items:
                    if isinstance(item, Invalid):
                        raise ItemFailed(item.field, item.issue)
                    if not isinstance(item, QuestionItem):  # it may refer to a new one
                        await self._new.flush(session, self.org)
                    notes = list(item.notes)
                    outcome = await self._write(session, item, notes)
                    outcomes.append((outcome, kind_of(item), notes))
                await self._new.flush(session, self.org)
                await self.times.flush(session)
                await self._flush_refs(session)
        except (ItemFailed, ValidationError, ServiceError):
            # The savepoint's writes are gone, but not from the objects the session loaded
            # (an UPDATE's new values were set on them): read afresh, or an item updated in
            # the savepoint would be compared with its rolled-back values.
            session.expire_all()
            self._categories, self.touched = saved
            self._made = 0
            self._bulk = False
            self._new.clear()
            self.times.clear()
            del self.deferred[deferred:]
            await self._prefetch(session, items)
            for item in items:
                await self.write(session, item)
            await self.times.flush(session)
            await self._flush_refs(session)
        else:
            self._bulk = False
            for outcome, kind, notes in outcomes:
                self.report.count(outcome, kind)
                for note in notes:
                    self.report.warn(note)
        for _ in range(self._made):
            self.report.count("created", "categories")
        self._made = 0

    # ---- one item ---------------------------------------------------------------------------

    async def write(self, session: AsyncSession, item: Item) -> None:
        if isinstance(item, Invalid):
            self.report.fail(item.source, item.field, item.issue, item.kind)
            return
        kind = kind_of(item)
        notes: list[Note] = list(item.notes)
        deferred = len(self.deferred)
        try:
            async with session.begin_nested():
                outcome = await self._write(session, item, notes)
        except (ItemFailed, ValidationError, ServiceError) as exc:
            del self.deferred[deferred:]  # a failed item's links are not rewritten later
            self.report.fail(item.source, *_failure(exc), kind)
        else:
            self.report.count(outcome, kind)
            for note in notes:
                self.report.warn(note)

    async def _write(self, session: AsyncSession, item: Item, notes: list[Note]) -> str:
        if isinstance(item, CategoryItem):
            return await self._category(session, item, notes)
        if isinstance(item, QuestionItem):
            if item.links:  # a copy: a batch written again item by item reads it afresh
                answer = await self._linked(
                    session, item.answer, item.links, "question", item.source,
                    self.org.default_locale, item.updated_at,
                )  # fmt: skip
                item = dataclasses.replace(item, answer=answer)
            return await self._question(session, item, notes)
        if isinstance(item, TranslationItem):
            if item.links and isinstance(item.fields.get("answer"), str):
                locale = canonical_tag(item.locale) or item.locale
                answer = await self._linked(
                    session, item.fields["answer"], item.links, "translation", item.source,
                    locale, item.updated_at,
                )  # fmt: skip
                item = dataclasses.replace(item, fields={**item.fields, "answer": answer})
            return await self._translation(session, item)
        if isinstance(item, AudienceItem):
            return await write_audience(session, self.org, item)
        assert isinstance(item, SettingsItem)
        return await self._settings(session, item)

    # ---- categories -------------------------------------------------------------------------

    async def _live_category(self, session: AsyncSession, id_: str | None) -> Category | None:
        if id_ is None:
            return None
        return (
            await session.execute(select(Category).where(Category.id == id_, categories.LIVE))
        ).scalar_one_or_none()

    async def _default_category(self, session: AsyncSession) -> str:
        if "" not in self._categories:
            self._categories[""] = (
                await session.execute(
                    select(Category.id).where(Category.is_default, categories.LIVE)
                )
            ).scalar_one()
        return self._categories[""]

    async def category_of_source(self, session: AsyncSession, source: str) -> str:
        found = self._categories.get(source)
        if found is None:
            id_ = await self._ref(session, "category", source)
            if await self._live_category(session, id_) is None:
                raise ItemFailed("category", f"no imported category {source}")
            assert id_ is not None
            self._categories[source] = found = id_
        return found

    async def _category(self, session: AsyncSession, item: CategoryItem, notes: list[Note]) -> str:
        parent = await self.category_of_source(session, item.parent) if item.parent else None
        current = await self._live_category(
            session,
            await self._default_category(session)
            if item.is_default
            else await self._ref(session, "category", item.source),
        )
        if current is not None:
            wanted: dict[str, Any] = {
                "name": item.name,
                "description": item.description,
                "order": item.order,
                "parentId": None if current.is_default else parent,
            }
            now: dict[str, Any] = {
                "name": current.name,
                "description": current.description,
                "order": current.sort_order,
                "parentId": current.parent_id,
            }
            if item.audiences is not None:
                wanted["audiences"] = item.audiences
                now["audiences"] = list(current.audiences or ())
            changes = {k: v for k, v in wanted.items() if now[k] != v}
            if changes:
                await categories.update_category(session, self.org, current.id, changes)
            self.times.keep("category", current.id, item, None if changes else current)
            await self._remember(session, "category", item.source, current.id)
            self._categories[item.source] = current.id
            return "updated" if changes else "unchanged"
        body: dict[str, Any] = {"name": item.name, "order": item.order, "parentId": parent}
        if item.description is not None:
            body["description"] = item.description
        if item.audiences:
            body["audiences"] = item.audiences
        created = await self._with_free_slug(
            session,
            item,
            notes,
            item.slug,
            CATEGORY_SLUG_MAX,
            lambda slug: categories.create_category(
                session,
                self.org,
                CategoryCreate.model_validate({**body, "slug": slug}),
                external_id=item.source,
            ),
        )
        await self._remember(session, "category", item.source, created["id"])
        self._categories[item.source] = created["id"]
        self.times.keep("category", created["id"], item)
        return "created"

    async def _with_free_slug(
        self,
        session: AsyncSession,
        item: CategoryItem | QuestionItem,
        notes: list[Note],
        slug: str | None,
        max_length: int,
        create: Any,
    ) -> dict[str, Any]:
        """``create(slug)``; a taken manual slug gets the usual ``-2``, ``-3``, ... suffix,
        and a note of the report."""
        if slug is None:
            result: dict[str, Any] = await create(None)
            return result
        base = slugify(slug, max_length) or slug
        for n in range(1, SLUG_TRIES + 1):
            candidate = with_suffix(base, n, max_length)
            try:
                async with session.begin_nested():
                    result = await create(candidate)
            except SlugConflict:
                continue
            if candidate != slug:
                notes.append(Note(item.source, "slug", f"{slug} is taken: {candidate} used"))
            return result
        raise ItemFailed("slug", f"{slug} and its next {SLUG_TRIES} suffixes are taken")

    async def _category_by_ref(self, session: AsyncSession, ref: str) -> str:
        """CSV and Markdown: a category by slug or name (case-insensitive); made when none."""
        key = "ref:" + ref.lower()
        if key in self._categories:
            return self._categories[key]
        found = (
            await session.execute(
                select(Category.id)
                .where(
                    categories.LIVE,
                    (Category.slug == ref) | (Category.name.ilike(ref.replace("%", r"\%"))),
                )
                .order_by(Category.slug != ref, Category.id)
                .limit(1)
            )
        ).scalar_one_or_none()
        if found is None:
            created = await categories.create_category(
                session, self.org, CategoryCreate.model_validate({"name": ref})
            )
            found = created["id"]
            self.touched.add(found)
            self._made += 1
        self._categories[key] = found
        return found

    # ---- questions --------------------------------------------------------------------------

    async def _question_category(self, session: AsyncSession, item: QuestionItem) -> str:
        if item.category:
            return await self.category_of_source(session, item.category)
        if item.category_ref:
            return await self._category_by_ref(session, item.category_ref)
        return await self._default_category(session)

    async def _question(self, session: AsyncSession, item: QuestionItem, notes: list[Note]) -> str:
        category = await self._question_category(session, item)
        id_ = await self._ref(session, "question", item.source)
        current = None
        if id_ is not None and id_ in self._new:  # the same source twice in one batch
            await self._new.flush(session, self.org)
        if id_ is not None:
            current = (
                await session.execute(
                    select(Question).where(Question.id == id_, Question.deleted_at.is_(None))
                )
            ).scalar_one_or_none()
        if current is not None:
            wanted: dict[str, Any] = {
                "title": item.title,
                "answer": item.answer,
                "categoryId": category,
                "order": item.order,
                "status": item.status,
            }
            now = {
                "title": current.title,
                "answer": current.answer,
                "categoryId": current.category_id,
                "order": current.sort_order,
                "status": _status_of(current),
            }
            if item.audiences is not None:
                wanted["audiences"] = item.audiences
                now["audiences"] = list(current.audiences or ())
            changes = {k: v for k, v in wanted.items() if now[k] != v}
            if item.status == "scheduled":
                changes["scheduledPublishAt"] = item.scheduled_publish_at
            if changes:
                QuestionCreate.model_validate(
                    {
                        "title": item.title,
                        "answer": item.answer,
                        "categoryId": category,
                        "status": item.status,
                        "order": item.order,
                        "scheduledPublishAt": item.scheduled_publish_at,
                        "audiences": item.audiences or [],
                    }
                )
                await questions.update_question(session, self.org, current.id, changes)
            self.times.keep("question", current.id, item, None if changes else current)
            self.touched.add(current.id)
            self._link_key(item, current.id)
            return "updated" if changes else "unchanged"
        body: dict[str, Any] = {
            "title": item.title,
            "answer": item.answer,
            "categoryId": category,
            "status": item.status,
            "order": item.order,
        }
        if item.audiences:  # checked one by one (``NewQuestions`` makes content for everyone)
            body["audiences"] = item.audiences
        if item.scheduled_publish_at is not None:
            body["scheduledPublishAt"] = item.scheduled_publish_at
        elif self._bulk and item.slug is None and not item.audiences:
            parsed = QuestionCreate.model_validate({**body, "slug": None})
            question_id = self._new.add(parsed, external_id=item.source)
            await self._remember(session, "question", item.source, question_id)
            self._link_key(item, question_id)
            self.times.keep("question", question_id, item)
            return "created"

        async def create(slug: str | None) -> dict[str, Any]:
            parsed = QuestionCreate.model_validate({**body, "slug": slug})
            created = await questions.create_question(
                session, self.org, parsed, external_id=item.source
            )
            public: dict[str, Any] = created.body["data"]
            return public

        public = await self._with_free_slug(
            session, item, notes, item.slug, QUESTION_SLUG_MAX, create
        )
        await self._remember(session, "question", item.source, public["id"])
        self._link_key(item, public["id"])
        self.times.keep("question", public["id"], item)
        return "created"

    # ---- translations and settings ----------------------------------------------------------

    async def _translation(self, session: AsyncSession, item: TranslationItem) -> str:
        id_ = await self._ref(session, item.kind, item.source)
        if id_ is None:
            raise ItemFailed("source", f"no imported {item.kind} {item.source}")
        self.touched.add(id_)
        if item.kind == "question":
            body = QuestionTranslationBody.model_validate({**item.fields, "status": item.status})
            question = await load(session, id_)
            tag = translations.translation_locale(self.org, question.locale, item.locale)
            before = (
                await session.execute(
                    select(QuestionTranslation).where(
                        QuestionTranslation.question_id == id_, QuestionTranslation.locale == tag
                    )
                )
            ).scalar_one_or_none()
            if (
                before is not None
                and (before.title, before.answer) == (body.title, body.answer)
                and body.status in (None, before.status)
            ):
                self.times.keep_translation("question", id_, tag, item, before)
                return "unchanged"
            self.times.keep_translation("question", id_, tag, item, None)
            _public, created = await translations.write_question_translation(
                session,
                self.org,
                id_,
                tag,
                {"title": body.title, "answer": body.answer},
                body.status,
                translations.question_digest(question),
            )
            return "created" if created else "updated"
        category_body = CategoryTranslationBody.model_validate(item.fields)
        category = await self._live_category(session, id_)
        if category is None:
            raise ItemFailed("source", f"no imported category {item.source}")
        tag = translations.translation_locale(self.org, category.locale, item.locale)
        before_c = (
            await session.execute(
                select(CategoryTranslation).where(
                    CategoryTranslation.category_id == id_, CategoryTranslation.locale == tag
                )
            )
        ).scalar_one_or_none()
        fields = {"name": category_body.name, "description": category_body.description}
        if before_c is not None and (before_c.name, before_c.description) == (
            fields["name"],
            fields["description"],
        ):
            self.times.keep_translation("category", id_, tag, item, before_c)
            return "unchanged"
        self.times.keep_translation("category", id_, tag, item, None)
        _public, created = await translations.write_category_translation(
            session, self.org, id_, tag, fields, translations.category_digest(category)
        )
        return "created" if created else "updated"

    async def _settings(self, session: AsyncSession, item: SettingsItem) -> str:
        before = await update_settings(session, self.org, {})
        after = await update_settings(session, self.org, item.values)
        row = (
            await session.execute(
                select(Organization.default_locale, Organization.locales).where(
                    Organization.id == self.org.id
                )
            )
        ).one()
        self.org = dataclasses.replace(
            self.org, default_locale=row.default_locale, locales=tuple(row.locales)
        )
        return "unchanged" if after == before else "updated"
