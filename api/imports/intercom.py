"""Intercom articles and collections JSON: ``{"collections": <GET /help_center/collections>,
"articles": <GET /articles>}`` (their ``{"type": "list", "data": [...]}`` wrappers, or bare
lists).

Collections become categories (``parent_id``: a collection's parent collection), articles
questions (``state``: published or draft; ``body`` HTML as Markdown; ``parent_id`` with
``parent_type`` ``collection`` its category), and each ``translated_content`` locale other than
the ``default_locale`` a translation. Field names: developers.intercom.com/docs/references/
rest-api/api.intercom.io/articles and /help-center (collections)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from api.imports.context import MAX_CATEGORIES, ParseContext, parents_first
from api.imports.items import (
    CategoryItem,
    Item,
    MalformedUpload,
    QuestionItem,
    TranslationItem,
)
from api.imports.json_lists import integer, list_prefixes, objects, text, top_level_keys
from api.imports.times import keep_times

LISTS = {"collections", "articles"}


def _collection(ident: object) -> str:
    return f"intercom:collection:{ident}"


def _translations(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    content = obj.get("translated_content")
    if not isinstance(content, dict):
        return
    own = (text(obj, "default_locale") or "").lower()
    for locale, fields in content.items():
        if locale != "type" and isinstance(fields, dict) and locale.lower() != own:
            yield locale, fields


def parse(file: BinaryIO, ctx: ParseContext) -> Iterator[Item]:
    top_level_keys(file, LISTS)
    tree: list[tuple[str, str | None, object]] = []
    later: list[TranslationItem] = []
    for n, obj in enumerate(objects(file, list_prefixes("collections"), "collections")):
        if obj.get("id") is None:
            raise MalformedUpload(f"collections[{n}]: no id")
        source = _collection(obj["id"])
        parent = _collection(obj["parent_id"]) if obj.get("parent_id") else None
        item = CategoryItem(
            source=source,
            name=text(obj, "name") or "",
            description=text(obj, "description") or None,
            parent=parent,
            order=integer(obj, "order"),
        )
        keep_times(item, obj.get("created_at"), obj.get("updated_at"))
        tree.append((source, parent, item))
        if len(tree) > MAX_CATEGORIES:
            raise MalformedUpload(f"more than {MAX_CATEGORIES} collections")
        for locale, fields in _translations(obj):
            if locale.lower() != ctx.default_locale.lower() and fields.get("name"):
                later.append(
                    TranslationItem(
                        kind="category",
                        source=source,
                        locale=locale,
                        fields={
                            "name": text(fields, "name") or "",
                            "description": text(fields, "description") or None,
                        },
                    )
                )
    for category in parents_first(tree):
        assert isinstance(category, CategoryItem)
        yield category
    yield from later
    for n, obj in enumerate(objects(file, list_prefixes("articles"), "articles")):
        if obj.get("id") is None:
            raise MalformedUpload(f"articles[{n}]: no id")
        source = f"intercom:{obj['id']}"
        parent = obj.get("parent_id") if obj.get("parent_type", "collection") else None
        question = QuestionItem(
            source=source,
            title=text(obj, "title") or "",
            answer="",
            status="published" if obj.get("state") == "published" else "draft",
            category=_collection(parent) if parent else None,
        )
        keep_times(question, obj.get("created_at"), obj.get("updated_at"))
        question.answer = ctx.markdown(
            text(obj, "body"), source, "answer", question.notes, question.links
        )
        yield question
        for locale, fields in _translations(obj):
            if locale.lower() == ctx.default_locale.lower() or not fields.get("title"):
                continue
            translation = TranslationItem(
                kind="question",
                source=source,
                locale=locale,
                fields={},
                status="published" if fields.get("state") == "published" else "draft",
            )
            keep_times(translation, fields.get("created_at"), fields.get("updated_at"))
            body = ctx.markdown(
                text(fields, "body"),
                f"{source}/{locale}",
                "body",
                translation.notes,
                translation.links,
            )
            translation.fields = {"title": text(fields, "title") or "", "answer": body}
            yield translation
