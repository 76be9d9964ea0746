"""A zip of Markdown files with YAML front matter (``title``, ``category``, ``status``,
``slug``, ``order``, ``locale``, ``externalId``); folders are categories (nested folders,
nested categories), unless ``category`` names one (a slug or a name).

A file is known by ``markdown:`` + its path without ``.md`` (and without a ``.<locale>``
suffix), or its ``externalId``; a file whose ``locale`` is another than the org's default is
the translation of the file known by the same id (``reset.md`` and ``reset.fr.md``)."""

from __future__ import annotations

import datetime
import posixpath
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import yaml

from api.imports.archive import Archive, open_zip, read_member
from api.imports.context import MAX_CATEGORIES, ParseContext
from api.imports.items import (
    CategoryItem,
    Invalid,
    Item,
    MalformedUpload,
    QuestionItem,
    TranslationItem,
)
from api.imports.links import markdown_file_key, markdown_links
from api.imports.times import keep_times

_FRONT = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n?", re.S)
_LOCALE_SUFFIX = re.compile(r"\.([A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*)$")


MAX_FRONT_MATTER = 64 * 1024  # characters of one file's front matter
SCALAR_KEYS = (
    "title",
    "category",
    "status",
    "slug",
    "order",
    "locale",
    "externalId",
    "createdAt",
    "updatedAt",
)
SCALARS = (str, int, float, bool, datetime.date)


class _NoAliases(yaml.SafeLoader):  # type: ignore[misc]  # (PyYAML ships no types)
    """YAML's safe loader without aliases (issue 42): ``*a`` repeats a node without its bytes,
    so eight nested levels of nine made a 312 MB title from 396 bytes. Refused where the
    composer meets one, before any node is built from it."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted", mark)
        return super().compose_node(parent, index)


def _front_matter(name: str, text: str) -> tuple[dict[str, Any], str]:
    match = _FRONT.match(text)
    if match is None:
        return {}, text
    if len(match.group(1)) > MAX_FRONT_MATTER:
        raise MalformedUpload(f"{name}: front matter longer than {MAX_FRONT_MATTER} characters")
    try:
        meta = yaml.load(match.group(1), Loader=_NoAliases) or {}  # noqa: S506 (safe, no alias)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" line {mark.line + 2}, column {mark.column + 1}" if mark else ""  # after ---
        problem = exc.problem or exc.context or "unreadable"
        raise MalformedUpload(f"{name}{where}: front matter is not YAML ({problem})") from None
    except yaml.YAMLError as exc:
        raise MalformedUpload(f"{name}: front matter is not YAML ({exc})") from None
    if not isinstance(meta, dict):
        raise MalformedUpload(f"{name}: front matter is not a mapping")
    for key in SCALAR_KEYS:
        if meta.get(key) is not None and not isinstance(meta[key], SCALARS):
            raise MalformedUpload(
                f"{name}: front matter {key} must be one value, not a list or map"
            )
    return meta, text[match.end() :]


def _files(archive: Archive) -> list[str]:
    names = [
        n
        for n in archive.namelist()
        if n.lower().endswith(".md") and not n.startswith("__MACOSX/") and "/." not in "/" + n
    ]
    return sorted(names)


def _source(name: str, meta: dict[str, Any], locale: str | None) -> str:
    if meta.get("externalId"):
        return str(meta["externalId"])
    stem = name[:-3]
    if locale:
        stem = _LOCALE_SUFFIX.sub("", stem)
    return f"markdown:{stem}"


def _read(archive: Archive, name: str) -> tuple[dict[str, Any], str]:
    try:
        text = read_member(archive, name).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MalformedUpload(f"{name}: not UTF-8 text") from None
    return _front_matter(name, text)


def parse(file: BinaryIO, ctx: ParseContext) -> Iterator[Item]:
    archive = open_zip(file, ctx.inflate_limit)
    names = _files(archive)
    folders = sorted({posixpath.dirname(n) for n in names} - {""})
    if len(folders) > MAX_CATEGORIES:
        raise MalformedUpload(f"more than {MAX_CATEGORIES} folders")
    known: set[str] = set()
    for folder in folders:  # sorted: a parent before its children
        parts = folder.split("/")
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            if path not in known:
                known.add(path)
                parent = "/".join(parts[: depth - 1])
                yield CategoryItem(
                    source=f"markdown:dir:{path}",
                    name=parts[depth - 1],
                    parent=f"markdown:dir:{parent}" if parent else None,
                )
    default = ctx.default_locale.lower()
    for translations in (False, True):
        for name in names:
            meta, body = _read(archive, name)
            locale = str(meta["locale"]) if meta.get("locale") else None
            is_translation = locale is not None and locale.lower() != default
            if is_translation != translations:
                continue
            source = _source(name, meta, locale)
            title = str(meta.get("title") or "")
            body, links = markdown_links(body.strip(), name) if ctx.convert else (body, [])
            if translations:
                assert locale is not None
                yield TranslationItem(
                    kind="question",
                    source=source,
                    locale=locale,
                    fields={"title": title, "answer": body.strip()},
                    status=str(meta["status"]) if meta.get("status") else None,
                    links=links,
                )
                continue
            order = meta.get("order", 0)
            if not isinstance(order, int) or isinstance(order, bool):
                yield Invalid(name, "order", f"{order!r} is not an integer")
                continue
            folder = posixpath.dirname(name)
            question = QuestionItem(
                source=source,
                title=title,
                answer=body.strip(),
                status=str(meta.get("status") or "draft"),
                category=None if meta.get("category") or not folder else f"markdown:dir:{folder}",
                category_ref=str(meta["category"]) if meta.get("category") else None,
                slug=str(meta["slug"]) if meta.get("slug") else None,
                order=order,
                links=links,
                link_key=markdown_file_key(name),
            )
            keep_times(question, meta.get("createdAt"), meta.get("updatedAt"))
            yield question
