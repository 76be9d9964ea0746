"""Zendesk Guide (Help Center API) JSON: ``{"categories": [...], "sections": [...],
"articles": [...], "translations": [...]}``, each as its list endpoint returns it.

Categories become top-level categories, sections their child categories (nested sections
under their parent section), articles questions (``draft`` -> draft, else published; the
``body`` HTML as Markdown), translations of a category, section or article in another locale
translations. Field names: developer.zendesk.com/api-reference/help_center/help-center-api/
(Categories, Sections, Articles, Translations)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from api.imports.context import MAX_CATEGORIES, ParseContext, parents_first
from api.imports.items import (
    CategoryItem,
    Invalid,
    Item,
    MalformedUpload,
    QuestionItem,
    TranslationItem,
)
from api.imports.json_lists import integer, list_prefixes, objects, text, top_level_keys
from api.imports.times import keep_times

LISTS = {"categories", "sections", "articles", "translations"}
SOURCE_TYPES = {"Article": "article", "Section": "section", "Category": "category"}


def _source(kind: str, ident: object) -> str:
    return f"zendesk:{ident}" if kind == "article" else f"zendesk:{kind}:{ident}"


def parse(file: BinaryIO, ctx: ParseContext) -> Iterator[Item]:
    top_level_keys(file, LISTS)
    locales: dict[str, str] = {}  # source -> its own locale (translations into it are skipped)
    tree: list[tuple[str, str | None, object]] = []
    for kind, name in (("category", "categories"), ("section", "sections")):
        for n, obj in enumerate(objects(file, list_prefixes(name), name)):
            if obj.get("id") is None:
                raise MalformedUpload(f"{name}[{n}]: no id")
            source = _source(kind, obj["id"])
            parent = None
            if kind == "section":
                if obj.get("parent_section_id") is not None:
                    parent = _source("section", obj["parent_section_id"])
                elif obj.get("category_id") is not None:
                    parent = _source("category", obj["category_id"])
            item = CategoryItem(
                source=source,
                name=text(obj, "name") or "",
                description=text(obj, "description") or None,
                parent=parent,
                order=integer(obj, "position"),
            )
            keep_times(item, obj.get("created_at"), obj.get("updated_at"))
            locales[source] = text(obj, "source_locale") or text(obj, "locale") or ""
            tree.append((source, parent, item))
            if len(tree) > MAX_CATEGORIES:
                raise MalformedUpload(f"more than {MAX_CATEGORIES} categories and sections")
    for category in parents_first(tree):
        assert isinstance(category, CategoryItem)
        yield category
    del tree
    for n, obj in enumerate(objects(file, list_prefixes("articles"), "articles")):
        if obj.get("id") is None:
            raise MalformedUpload(f"articles[{n}]: no id")
        source = _source("article", obj["id"])
        locales[source] = text(obj, "source_locale") or text(obj, "locale") or ""
        question = QuestionItem(
            source=source,
            title=text(obj, "title") or text(obj, "name") or "",
            answer="",
            status="draft" if obj.get("draft") else "published",
            category=_source("section", obj["section_id"]) if obj.get("section_id") else None,
            order=integer(obj, "position"),
        )
        keep_times(question, obj.get("created_at"), obj.get("updated_at"))
        question.answer = ctx.markdown(
            text(obj, "body"), source, "answer", question.notes, question.links
        )
        yield question
    for n, obj in enumerate(objects(file, list_prefixes("translations"), "translations")):
        found = SOURCE_TYPES.get(text(obj, "source_type") or "")
        if found is None or obj.get("source_id") is None:
            yield Invalid(
                f"translations[{n}]",
                "source_type",
                "not Article, Section or Category",
                "translations",
            )
            continue
        kind = found
        source = _source(kind, obj["source_id"])
        locale = text(obj, "locale") or ""
        if locale.lower() in (locales.get(source, "").lower(), ctx.default_locale.lower()):
            continue  # the resource's own text, imported with it
        translation = TranslationItem(
            kind="question" if kind == "article" else "category",
            source=source,
            locale=locale,
            fields={},
            status="draft" if obj.get("draft") else "published",
        )
        keep_times(translation, obj.get("created_at"), obj.get("updated_at"))
        links = translation.links if kind == "article" else None
        body = ctx.markdown(
            text(obj, "body"), f"{source}/{locale}", "body", translation.notes, links
        )
        if kind == "article":
            translation.fields = {"title": text(obj, "title") or "", "answer": body}
        else:
            translation.fields = {"name": text(obj, "title") or "", "description": body or None}
            translation.status = None
        yield translation
