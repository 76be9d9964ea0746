"""Our own export bundle (``docs/export-bundle.schema.json``): a zip of ``manifest.json``,
``settings.json`` and NDJSON files. Imported: settings, audiences (by slug), categories (the
default category onto the org's own), questions (both with their ``audiences``) and
translations; ``webhooks.ndjson`` is left out (secrets are never exported: recreate webhooks),
and so are revisions (history stays with the source org)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from api.imports.archive import ndjson, open_zip, read_member
from api.imports.context import ParseContext
from api.imports.items import (
    AudienceItem,
    CategoryItem,
    Invalid,
    Item,
    MalformedUpload,
    QuestionItem,
    SettingsItem,
    TranslationItem,
)
from api.imports.times import keep_times

BUNDLE_FORMAT = "faq-export"
BUNDLE_VERSION = 1
SETTINGS_FIELDS = ("defaultLocale", "locales", "helpCenter")
HELP_CENTER_FIELDS = (
    "enabled",
    "title",
    "primaryColor",
    "externalImages",
    "headerLinks",
    "footerLinks",
    "legalText",
    "labels",
)


def _str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _source(obj: dict[str, Any], key: str = "id") -> str | None:
    value = _str(obj, key)
    return f"faq:{value}" if value else None


class NotSlugs(ValueError):
    """An ``audiences`` value that is not a list of strings."""


def _audiences(obj: dict[str, Any]) -> list[str] | None:
    """The item's audience slugs (each once, in order); None when the line has none (a
    bundle of before audiences: the item's audiences are left as they are)."""
    value = obj.get("audiences")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise NotSlugs()
    return list(dict.fromkeys(value))


def _invalid(source: str, kind: str) -> Invalid:
    return Invalid(source, "audiences", "not a list of audience slugs", kind)


def parse(file: BinaryIO, ctx: ParseContext) -> Iterator[Item]:
    archive = open_zip(file, ctx.inflate_limit)
    if "manifest.json" not in archive.namelist():
        raise MalformedUpload("no manifest.json: not a bundle of this service")
    try:
        manifest = orjson.loads(read_member(archive, "manifest.json"))
    except orjson.JSONDecodeError as exc:
        raise MalformedUpload(f"manifest.json: invalid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise MalformedUpload(f"manifest.json: format is not {BUNDLE_FORMAT!r}")
    if manifest.get("version") != BUNDLE_VERSION:
        raise MalformedUpload(f"manifest.json: version {manifest.get('version')!r} unknown")
    if "settings.json" in archive.namelist():
        try:
            settings = orjson.loads(read_member(archive, "settings.json"))
        except orjson.JSONDecodeError as exc:
            raise MalformedUpload(f"settings.json: invalid JSON ({exc})") from None
        if not isinstance(settings, dict):
            raise MalformedUpload("settings.json: not a JSON object")
        values = {k: settings[k] for k in SETTINGS_FIELDS if k in settings}
        if isinstance(values.get("helpCenter"), dict):  # its read-only logoUrl left out
            hc = values["helpCenter"]
            values["helpCenter"] = {k: v for k, v in hc.items() if k in HELP_CENTER_FIELDS}
        yield SettingsItem("settings.json", values)
    for line, obj in ndjson(archive, "audiences.ndjson"):
        named = _source(obj) or f"audiences.ndjson line {line}"
        slug = _str(obj, "slug")
        if not slug:
            yield Invalid(named, "slug", "an audience needs its slug", "audiences")
            continue
        yield AudienceItem(named, slug, _str(obj, "name") or "", _str(obj, "description"))
    for line, obj in ndjson(archive, "categories.ndjson"):
        source = _source(obj)
        if source is None:
            raise MalformedUpload(f"categories.ndjson line {line}: no id")
        try:
            audiences = _audiences(obj)
        except NotSlugs:
            yield _invalid(source, "categories")
            continue
        category = CategoryItem(
            source=source,
            name=_str(obj, "name") or "",
            description=_str(obj, "description"),
            parent=_source(obj, "parentId"),
            order=_int(obj, "order"),
            slug=_str(obj, "slug"),
            is_default=obj.get("isDefault") is True,
            audiences=audiences,
        )
        keep_times(category, obj.get("createdAt"), obj.get("updatedAt"))
        yield category
    for line, obj in ndjson(archive, "questions.ndjson"):
        source = _source(obj)
        if source is None:
            raise MalformedUpload(f"questions.ndjson line {line}: no id")
        try:
            audiences = _audiences(obj)
        except NotSlugs:
            yield _invalid(source, "questions")
            continue
        question = QuestionItem(
            source=source,
            title=_str(obj, "title") or "",
            answer=_str(obj, "answer") or "",
            status=_str(obj, "status") or "draft",
            category=_source(obj, "categoryId"),
            slug=_str(obj, "slug"),
            order=_int(obj, "order"),
            scheduled_publish_at=_str(obj, "scheduledPublishAt"),
            audiences=audiences,
        )
        keep_times(question, obj.get("createdAt"), obj.get("updatedAt"))
        yield question
    for line, obj in ndjson(archive, "translations.ndjson"):
        source = _source(obj)
        resource = obj.get("resource")
        if source is None or resource not in ("question", "category"):
            yield Invalid(
                f"translations.ndjson line {line}", "resource", "unknown resource", "translations"
            )
            continue
        fields: dict[str, str | None]
        if resource == "question":
            fields = {"title": _str(obj, "title") or "", "answer": _str(obj, "answer") or ""}
        else:
            fields = {"name": _str(obj, "name") or "", "description": _str(obj, "description")}
        yield TranslationItem(
            kind=str(resource),
            source=source,
            locale=_str(obj, "locale") or "",
            fields=fields,
            status=_str(obj, "status") if resource == "question" else None,
        )
