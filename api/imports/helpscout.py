"""Help Scout Docs API JSON: ``{"collections": ..., "categories": ..., "articles": ...}``,
each as its list endpoint returns it (``{"collections": {"page", "pages", "count", "items":
[...]}}``), or bare lists; an article may be the ``{"article": {...}}`` of ``GET
/v1/articles/{id}`` (the list endpoints give no ``text``).

Collections become categories, categories their child categories, articles questions
(``status`` ``published`` or else a draft; ``text`` HTML as Markdown; the first of
``categories`` its category, else its collection; ``slug`` kept). Field names:
developer.helpscout.com/docs-api/ (collections, categories, articles)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from api.imports.context import MAX_CATEGORIES, ParseContext, parents_first
from api.imports.items import CategoryItem, Item, MalformedUpload, Note, QuestionItem
from api.imports.json_lists import integer, list_prefixes, objects, text, top_level_keys
from api.imports.links import helpscout_number
from api.imports.times import keep_times

LISTS = {"collections", "categories", "articles"}


def parse(file: BinaryIO, ctx: ParseContext) -> Iterator[Item]:
    top_level_keys(file, LISTS)
    tree: list[tuple[str, str | None, object]] = []
    for kind, name in (("collection", "collections"), ("category", "categories")):
        for n, obj in enumerate(objects(file, list_prefixes(name), name)):
            if obj.get("id") is None:
                raise MalformedUpload(f"{name}[{n}]: no id")
            source = f"helpscout:{kind}:{obj['id']}"
            parent = None
            if kind == "category" and obj.get("collectionId"):
                parent = f"helpscout:collection:{obj['collectionId']}"
            item = CategoryItem(
                source=source,
                name=text(obj, "name") or "",
                description=text(obj, "description") or None,
                parent=parent,
                order=integer(obj, "order"),
                slug=text(obj, "slug") or None,
            )
            keep_times(item, obj.get("createdAt"), obj.get("updatedAt"))
            tree.append((source, parent, item))
            if len(tree) > MAX_CATEGORIES:
                raise MalformedUpload(f"more than {MAX_CATEGORIES} collections and categories")
    for category in parents_first(tree):
        assert isinstance(category, CategoryItem)
        yield category
    prefixes = list_prefixes("articles", ("article",))
    for n, obj in enumerate(objects(file, prefixes, "articles")):
        if "article" in obj and isinstance(obj["article"], dict):
            obj = obj["article"]
        if obj.get("id") is None:
            raise MalformedUpload(f"articles[{n}]: no id")
        source = f"helpscout:{obj['id']}"
        in_categories = [c for c in obj.get("categories") or [] if isinstance(c, str | int)]
        category = None
        if in_categories:
            category = f"helpscout:category:{in_categories[0]}"
        elif obj.get("collectionId"):
            category = f"helpscout:collection:{obj['collectionId']}"
        question = QuestionItem(
            source=source,
            title=text(obj, "name") or "",
            answer="",
            status="published" if obj.get("status") == "published" else "draft",
            category=category,
            slug=text(obj, "slug") or None,
            link_key=helpscout_number(obj["number"]) if obj.get("number") is not None else None,
        )
        keep_times(question, obj.get("createdAt"), obj.get("updatedAt"))
        if len(in_categories) > 1:
            question.notes.append(
                Note(source, "categories", f"in {len(in_categories)} categories: the first kept")
            )
        question.answer = ctx.markdown(
            text(obj, "text"), source, "answer", question.notes, question.links
        )
        yield question
