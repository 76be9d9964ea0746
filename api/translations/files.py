"""Translation files: an org's translatable text as one XLIFF 1.2 document (export), and the
targets of such a document written back as draft translations (import).

Export: every live question and category, one unit per field (a category's description only
when set), grouped in one ``<file>`` per source locale; the target is the translation in the
requested locale when there is one (state: ``api.translations.xliff``). Resources whose own
locale is the requested one have nothing to translate and are left out. Past
``EXPORT_MAX_CHARS`` of text the export is refused (413 ``export_too_large``), counted by
PostgreSQL before anything is sent. The document then streams: each source locale's
categories and questions are read in keyset batches of at most ``EXPORT_BATCH_ROWS`` rows and
``EXPORT_BATCH_BYTES`` of text (PostgreSQL measures it, beyond a batch's first row), each batch
serialised in a thread; each read stands alone (no transaction spans the stream).

Import: units are grouped per resource; a resource any of whose units has an error is not
written at all, the others are (all in the request's one transaction). A unit without a target
(or with an empty one) is skipped: a file may be partly translated. ``updated`` counts the
translations written, ``unchanged`` those whose text equals the stored translation (not written,
so their status and ``outdated`` stay as they were).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    and_,
    any_,
    func,
    literal,
    null,
    select,
    tuple_,
)
from sqlalchemy.dialects.postgresql import ARRAY, distinct_on
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
    build_document,
    frame,
    parse_document,
    units_xml,
)
from tenancy.db import read_rows
from tenancy.errors import ServiceError, ValidationFailed, field_error
from tenancy.principal import Principal

EXPORT_MAX_CHARS = 32 * 2**20  # source and target text of one export, in characters
EXPORT_BATCH_ROWS = 500  # resources of one read of an export, at most
EXPORT_BATCH_BYTES = 2 * 2**20  # their source and target text (UTF-8) beyond the first, at most
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


def export_locale(org: Principal, locale: str | None) -> str:
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


def _chars(column: Any) -> ColumnElement[int]:
    return func.coalesce(func.char_length(column), 0)


def _octets(column: Any) -> ColumnElement[int]:
    """Bytes of a text column, from its header (a TOASTed value is not read)."""
    return func.coalesce(func.octet_length(column), 0)


@dataclass(frozen=True)
class _Kind:
    """How one kind of resource is read for an export: its model, its translation model
    (joined on ``key``), its fields and their translations (labels ``t_<field>``)."""

    name: str
    model: Any
    translation: Any
    key: str
    fields: tuple[str, str]

    def join(self, locale: str) -> ColumnElement[bool]:
        t = self.translation
        return and_(getattr(t, self.key) == self.model.id, t.locale == locale)

    def live(self) -> ColumnElement[bool]:
        return cast(ColumnElement[bool], self.model.deleted_at.is_(None))


QUESTIONS = _Kind("question", Question, QuestionTranslation, "question_id", ("title", "answer"))
CATEGORIES = _Kind(
    "category", Category, CategoryTranslation, "category_id", ("name", "description")
)


def _text_chars(kind: _Kind) -> ColumnElement[int]:
    """The characters one resource adds to an export: each field's source and target (a
    category's description, and its target, only when the category has one)."""
    m, t = kind.model, kind.translation
    first, second = kind.fields
    chars = _chars(getattr(m, first)) + _chars(getattr(t, first))
    if kind is CATEGORIES:  # an optional field: its unit exists only with a source
        both = func.char_length(m.description) + _chars(t.description)
        return chars + func.coalesce(both, 0)
    return chars + _chars(getattr(m, second)) + _chars(getattr(t, second))


async def _export_chars(session: AsyncSession, tag: str) -> int:
    total = 0
    for kind in (CATEGORIES, QUESTIONS):
        m = kind.model
        stmt = (
            select(func.coalesce(func.sum(_text_chars(kind)), 0))
            .select_from(m)
            .outerjoin(kind.translation, kind.join(tag))
            .where(kind.live(), m.locale != tag)
        )
        total += int((await read_rows(session, stmt)).scalar_one())
    return total


async def _source_locales(session: AsyncSession, tag: str) -> list[str]:
    """The source locales in the order of their first unit: categories, then questions, each
    by (sort order, id); one ``<file>`` each."""
    found: dict[str, None] = {}
    for kind in (CATEGORIES, QUESTIONS):
        m = kind.model
        firsts = (
            select(m.locale, m.sort_order, m.id)
            .where(kind.live(), m.locale != tag)
            .ext(distinct_on(m.locale))
            .order_by(m.locale, m.sort_order, m.id)
            .subquery()
        )
        stmt = select(firsts.c.locale).order_by(firsts.c.sort_order, firsts.c.id)
        found.update(dict.fromkeys((await read_rows(session, stmt)).scalars()))
    return list(found)


@dataclass(frozen=True)
class ExportPlan:
    """An export checked and ready to stream."""

    locale: str  # the target, canonical
    default_locale: str  # the org's: the one empty <file> of an org with nothing to translate
    source_locales: list[str]  # one <file> each, in order


async def plan_export(session: AsyncSession, org: Principal, locale: str | None) -> ExportPlan:
    """400 unless ``locale`` is enabled, 413 past ``EXPORT_MAX_CHARS``: before anything
    streams."""
    tag = export_locale(org, locale)
    if await _export_chars(session, tag) > EXPORT_MAX_CHARS:
        raise ExportTooLarge()
    return ExportPlan(tag, org.default_locale, await _source_locales(session, tag))


def _batch(kind: _Kind, tag: str, source: str, after: tuple[int, str] | None) -> Select[Any]:
    """The next rows of ``kind`` in ``source`` after the keyset ``after`` (sort order, id): at
    most ``EXPORT_BATCH_ROWS``, and past the first only while the text before them stays
    under ``EXPORT_BATCH_BYTES`` (a running sum of sizes read from the values' headers, so
    rows past the budget are never fetched)."""
    m, t = kind.model, kind.translation
    first, second = kind.fields
    order = (m.sort_order, m.id)
    size = (
        _octets(getattr(m, first))
        + _octets(getattr(m, second))
        + _octets(getattr(t, first))
        + _octets(getattr(t, second))
    )
    inner = (
        select(
            m.id,
            m.slug,
            m.sort_order,
            getattr(m, first).label(first),
            getattr(m, second).label(second),
            getattr(t, first).label("t_" + first),
            getattr(t, second).label("t_" + second),
            (t.status if kind is QUESTIONS else null()).label("status"),  # categories have none
            t.source_digest,
            size.label("size"),
            func.sum(size).over(order_by=order).label("running"),
        )
        .outerjoin(t, kind.join(tag))
        .where(kind.live(), m.locale == source)
        .order_by(*order)
        .limit(EXPORT_BATCH_ROWS)
    )
    if after is not None:
        inner = inner.where(tuple_(*order) > tuple_(*after))
    rows = inner.subquery()
    # Computed for the rows sent only: the digest reads the whole text.
    outdated = rows.c.source_digest != _digest(rows.c[first], rows.c[second])
    return (
        select(rows, outdated.label("outdated"))
        .where(rows.c.running - rows.c.size < EXPORT_BATCH_BYTES)
        .order_by(rows.c.sort_order, rows.c.id)
    )


def _units(kind: _Kind, row: Any) -> list[ExportUnit]:
    first, second = kind.fields
    translated = getattr(row, "t_" + first) is not None
    status = row.status if kind is QUESTIONS else None
    state = _state(status, bool(row.outdated)) if translated else None
    note = f"{kind.name} {row.slug}"
    units = [
        ExportUnit(
            kind.name, row.id, first, getattr(row, first), getattr(row, "t_" + first), state, note
        )
    ]
    source = getattr(row, second)
    if source is not None:  # a category's description is optional
        target = getattr(row, "t_" + second) if translated else None
        units.append(ExportUnit(kind.name, row.id, second, source, target, state, note))
    return units


async def _batches(
    session: AsyncSession, kind: _Kind, tag: str, source: str
) -> AsyncIterator[list[ExportUnit]]:
    after: tuple[int, str] | None = None
    while rows := (await read_rows(session, _batch(kind, tag, source, after))).all():
        yield [unit for row in rows for unit in _units(kind, row)]
        after = (rows[-1].sort_order, rows[-1].id)


async def export_chunks(session: AsyncSession, plan: ExportPlan) -> AsyncIterator[bytes]:
    """The org's XLIFF 1.2 document for translators into ``plan.locale``, in pieces: the
    bytes ``build_document`` gives for the same units. Closes ``session`` at the end."""
    try:
        if not plan.source_locales:  # nothing to translate: one empty <file>
            yield build_document(plan.locale, plan.default_locale, [])
            return
        pieces = frame(plan.locale, plan.source_locales)
        yield pieces[0]
        for i, source in enumerate(plan.source_locales):
            for kind in (CATEGORIES, QUESTIONS):
                async for units in _batches(session, kind, plan.locale, source):
                    yield await asyncio.to_thread(units_xml, plan.locale, units)
            yield pieces[i + 1]
    finally:
        await session.close()


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


def _gather(org: Principal, units: list[ImportUnit], result: ImportResult) -> list[Pending]:
    """Units with a target, grouped per (resource, locale); checks that need no database."""
    pending: dict[tuple[str, str, str], Pending] = {}
    seen: set[tuple[str, str]] = set()
    tags: dict[str, str | None] = {}  # a file names a few languages, over and over
    for unit in units:
        if not unit.target:
            continue  # not translated yet
        parts = _split_id(unit.unit_id)
        if parts is None:
            result.error(unit.unit_id, "unknown_unit", "not a unit id of this service")
            continue
        kind, resource_id, name = parts
        tag = None
        if unit.target_language:
            if unit.target_language not in tags:
                tags[unit.target_language] = canonical_tag(unit.target_language)
            tag = tags[unit.target_language]
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


def _ids(ids: set[str]) -> Any:
    """One array parameter (a file may name thousands of ids: one placeholder each would be
    compiled on the event loop)."""
    return literal(sorted(ids), ARRAY(String))


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
            model.id == any_(_ids(ids)), model.deleted_at.is_(None)
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
            q.question_id == any_(_ids({rid for rid, _ in keys}))
        )
    else:
        c = CategoryTranslation
        stmt = select(c.category_id.label("rid"), c.locale, c.name, c.description).where(
            c.category_id == any_(_ids({rid for rid, _ in keys}))
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


def _read_units(org: Principal, body: bytes, result: ImportResult) -> list[Pending]:
    return _gather(org, parse_document(body), result)


async def import_document(session: AsyncSession, org: Principal, body: bytes) -> dict[str, Any]:
    """Write the targets of an XLIFF document as draft translations; per-unit errors."""
    result = ImportResult()
    # Parsing and grouping are CPU-bound (about 1.5 s for a 1 MiB file of 11,000 units): off
    # the event loop. The body is bounded already (the app's body limit,
    # ``FAQ_MAX_BODY_BYTES``: 413 beyond, before it is read).
    groups = await asyncio.to_thread(_read_units, org, body, result)
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
