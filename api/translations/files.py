"""Translation files: an org's translatable text as one XLIFF 1.2 document (export), and the
targets of such a document written back as draft translations (import).

Export: every live question and category, one unit per field (a category's description only
when set), grouped in one ``<file>`` per source locale; the target is the translation in the
requested locale when there is one (state: ``api.translations.xliff``). Resources whose own
locale is the requested one have nothing to translate and are left out. The document is built
in memory from rows streamed out of PostgreSQL and bounded: past ``EXPORT_MAX_CHARS`` of text
the export is refused (413 ``export_too_large``) rather than exhausting the process.

Import: units are grouped per resource; a resource any of whose units has an error is not
written at all, the others are (all in the request's one transaction). A unit without a target
(or with an empty one) is skipped: a file may be partly translated. ``updated`` counts the
translations written, ``unchanged`` those whose text equals the stored translation (not written,
so their status and ``outdated`` stay as they were).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.locales import canonical_tag
from api.questions.models import Question
from api.translations import service
from api.translations.models import CategoryTranslation, QuestionTranslation, source_digest_sql
from api.translations.xliff import (
    FIELDS,
    STATE_FINAL,
    STATE_OUTDATED,
    STATE_TRANSLATED,
    ExportUnit,
    ImportUnit,
    XliffBuilder,
    parse_document,
)
from tenancy.context import OrgContext
from tenancy.errors import ServiceError, ValidationFailed, field_error

EXPORT_MAX_CHARS = 32 * 2**20  # source and target text of one export, in characters
STREAM_BATCH = 500
MAX_LENGTHS = {
    "question": {"title": 500, "answer": 100_000},
    "category": {"name": 200, "description": 5000},
}
REQUIRED = {"question": ("title", "answer"), "category": ("name",)}
PUBLISHED = "published"


class ExportTooLarge(ServiceError):
    status = 413
    code = "export_too_large"
    message = f"The export exceeds {EXPORT_MAX_CHARS} characters of text."


# ---- export --------------------------------------------------------------------------------


def export_locale(org: OrgContext, locale: str | None) -> str:
    """The requested locale in canonical case, when enabled; else 400 on field ``locale``."""
    tag = canonical_tag(locale) if locale else None
    if tag is None or tag not in org.locales:
        issue = "is required" if not locale else "not enabled"
        raise ValidationFailed(
            "Name an enabled locale: ?locale=TAG (see /settings).",
            details=field_error("locale", issue),
        )
    return tag


def _digest(*columns: Any) -> ColumnElement[str]:
    return source_digest_sql(*columns)


def _state(status: str | None, outdated: bool) -> str:
    if outdated:
        return STATE_OUTDATED
    return STATE_FINAL if status == PUBLISHED else STATE_TRANSLATED


async def _question_units(
    session: AsyncSession, locale: str
) -> AsyncIterator[tuple[str, ExportUnit]]:
    t = QuestionTranslation
    stmt = (
        select(
            Question.id,
            Question.slug,
            Question.locale,
            Question.title,
            Question.answer,
            t.title.label("t_title"),
            t.answer.label("t_answer"),
            t.status,
            (t.source_digest != _digest(Question.title, Question.answer)).label("outdated"),
        )
        .outerjoin(t, and_(t.question_id == Question.id, t.locale == locale))
        .where(Question.deleted_at.is_(None), Question.locale != locale)
        .order_by(Question.sort_order, Question.id)
        .execution_options(yield_per=STREAM_BATCH)
    )
    result = await session.stream(stmt)
    async for row in result:
        state = _state(row.status, bool(row.outdated)) if row.t_title is not None else None
        note = f"question {row.slug}"
        for name, source, target in (
            ("title", row.title, row.t_title),
            ("answer", row.answer, row.t_answer),
        ):
            yield row.locale, ExportUnit("question", row.id, name, source, target, state, note)


async def _category_units(
    session: AsyncSession, locale: str
) -> AsyncIterator[tuple[str, ExportUnit]]:
    t = CategoryTranslation
    stmt = (
        select(
            Category.id,
            Category.slug,
            Category.locale,
            Category.name,
            Category.description,
            t.name.label("t_name"),
            t.description.label("t_description"),
            (t.source_digest != _digest(Category.name, Category.description)).label("outdated"),
        )
        .outerjoin(t, and_(t.category_id == Category.id, t.locale == locale))
        .where(Category.deleted_at.is_(None), Category.locale != locale)
        .order_by(Category.sort_order, Category.id)
        .execution_options(yield_per=STREAM_BATCH)
    )
    result = await session.stream(stmt)
    async for row in result:
        translated = row.t_name is not None
        state = _state(None, bool(row.outdated)) if translated else None
        note = f"category {row.slug}"
        yield row.locale, ExportUnit("category", row.id, "name", row.name, row.t_name, state, note)
        if row.description is not None:
            target = row.t_description if translated else None
            yield (
                row.locale,
                ExportUnit("category", row.id, "description", row.description, target, state, note),
            )


async def export_document(session: AsyncSession, org: OrgContext, locale: str | None) -> bytes:
    """The org's XLIFF 1.2 document for translators into ``locale``."""
    tag = export_locale(org, locale)
    builder = XliffBuilder(tag)
    budget = EXPORT_MAX_CHARS
    for units in (_category_units(session, tag), _question_units(session, tag)):
        async for source_locale, unit in units:
            budget -= len(unit.source) + len(unit.target or "")
            if budget < 0:
                raise ExportTooLarge()
            builder.add(source_locale, unit)
    return builder.document(org.default_locale)


# ---- import --------------------------------------------------------------------------------


@dataclass
class Pending:
    """The units of one resource in one locale, gathered from the file."""

    kind: str
    resource_id: str
    locale: str
    fields: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)  # field -> unit id
    failed: bool = False


@dataclass
class ImportResult:
    updated: int = 0
    unchanged: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)

    def error(self, unit: str, code: str, issue: str) -> None:
        self.errors.append({"unit": unit, "code": code, "issue": issue})

    def public(self) -> dict[str, Any]:
        return {"updated": self.updated, "unchanged": self.unchanged, "errors": self.errors}


def _split_id(unit_id: str) -> tuple[str, str, str] | None:
    parts = unit_id.split("/")
    if len(parts) != 3 or parts[0] not in FIELDS or parts[2] not in FIELDS[parts[0]]:
        return None
    return parts[0], parts[1], parts[2]


def _gather(org: OrgContext, units: list[ImportUnit], result: ImportResult) -> list[Pending]:
    """Units with a target, grouped per (resource, locale); checks that need no database."""
    pending: dict[tuple[str, str, str], Pending] = {}
    seen: set[tuple[str, str]] = set()
    for unit in units:
        if not unit.target:
            continue  # not translated yet
        parts = _split_id(unit.unit_id)
        if parts is None:
            result.error(unit.unit_id, "unknown_unit", "not a unit id of this service")
            continue
        kind, resource_id, name = parts
        tag = canonical_tag(unit.target_language) if unit.target_language else None
        key = (kind, resource_id, tag or "")
        group = pending.setdefault(key, Pending(kind, resource_id, tag or ""))
        if (unit.unit_id, group.locale) in seen:
            result.error(unit.unit_id, "duplicate_unit", "appears twice for this locale")
            group.failed = True
            continue
        seen.add((unit.unit_id, group.locale))
        group.units[name] = unit.unit_id
        if tag is None or tag not in org.locales:
            issue = (
                "the file has no target-language"
                if not unit.target_language
                else (f"target-language {unit.target_language} is not enabled")
            )
            result.error(unit.unit_id, "locale_not_enabled", issue)
            group.failed = True
            continue
        limit = MAX_LENGTHS[kind][name]
        if len(unit.target) > limit:
            result.error(unit.unit_id, "too_long", f"at most {limit} characters")
            group.failed = True
            continue
        group.fields[name] = unit.target
    return list(pending.values())


async def _sources(session: AsyncSession, kind: str, ids: set[str]) -> dict[str, tuple[str, str]]:
    """Live resources of the org among ``ids``: id -> (own locale, digest of the source
    fields, computed by PostgreSQL: the writers need it, the text need not travel)."""
    if not ids:
        return {}
    digest = (
        source_digest_sql(Question.title, Question.answer)
        if kind == "question"
        else source_digest_sql(Category.name, Category.description)
    )
    model = Question if kind == "question" else Category
    rows = await session.execute(
        select(model.id, model.locale, digest.label("digest")).where(
            model.id.in_(ids), model.deleted_at.is_(None)
        )
    )
    return {row.id: (row.locale, row.digest) for row in rows}


async def _stored(
    session: AsyncSession, kind: str, keys: set[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, str | None]]:
    """Existing translations among (resource id, locale) pairs: their text fields."""
    if not keys:
        return {}
    stmt: Any
    if kind == "question":
        q = QuestionTranslation
        stmt = select(q.question_id.label("rid"), q.locale, q.title, q.answer).where(
            q.question_id.in_({rid for rid, _ in keys})
        )
    else:
        c = CategoryTranslation
        stmt = select(c.category_id.label("rid"), c.locale, c.name, c.description).where(
            c.category_id.in_({rid for rid, _ in keys})
        )
    stored = {}
    for row in await session.execute(stmt):
        if (row.rid, row.locale) in keys:
            stored[(row.rid, row.locale)] = {n: getattr(row, n) for n in FIELDS[kind]}
    return stored


def _fail_group(group: Pending, result: ImportResult, code: str, issue: str) -> None:
    for unit_id in group.units.values():
        result.error(unit_id, code, issue)
    group.failed = True


async def import_document(session: AsyncSession, org: OrgContext, body: bytes) -> dict[str, Any]:
    """Write the targets of an XLIFF document as draft translations; per-unit errors."""
    result = ImportResult()
    groups = _gather(org, parse_document(body), result)
    for kind in FIELDS:
        mine = [g for g in groups if g.kind == kind and not g.failed]
        sources = await _sources(session, kind, {g.resource_id for g in mine})
        for group in mine:
            found = sources.get(group.resource_id)
            own = found[0] if found is not None else None
            if own is None:
                _fail_group(group, result, "not_found", f"no such {kind} in this organization")
            elif own == group.locale:
                _fail_group(group, result, "locale_is_source", f"{own} is the {kind}'s own locale")
        live = [g for g in mine if not g.failed]
        stored = await _stored(session, kind, {(g.resource_id, g.locale) for g in live})
        for group in live:
            before = stored.get((group.resource_id, group.locale))
            merged: dict[str, str | None] = dict(before or {})
            merged.update(group.fields)
            missing = [n for n in REQUIRED[kind] if not merged.get(n)]
            if missing:
                _fail_group(
                    group,
                    result,
                    "incomplete",
                    f"no translation yet: the file must give {' and '.join(missing)}",
                )
                continue
            if before is not None and merged == before:
                result.unchanged += 1
                continue
            if kind == "question":
                await service.write_question_translation(
                    session,
                    org,
                    group.resource_id,
                    group.locale,
                    merged,
                    service.DRAFT,
                    sources[group.resource_id][1],
                )
            else:
                await service.write_category_translation(
                    session,
                    org,
                    group.resource_id,
                    group.locale,
                    merged,
                    sources[group.resource_id][1],
                )
            result.updated += 1
    return result.public()
