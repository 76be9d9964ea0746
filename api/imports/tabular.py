"""CSV: a header row naming our fields, one question per row.

Columns: ``title`` and ``answer`` (required), ``externalId``, ``category`` (a slug or a name;
created when no category has it), ``status``, ``slug``, ``order``, ``locale``, ``createdAt``
and ``updatedAt`` (ISO 8601). A row whose
``locale`` is another than the org's default is the translation of the row with the same
``externalId`` (read in a second pass, so it may come before it). A row without
``externalId`` is known by ``csv:`` + its slug (or its title's)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import BinaryIO

from api.imports.context import ParseContext
from api.imports.items import Invalid, Item, MalformedUpload, QuestionItem, TranslationItem
from api.imports.times import keep_times
from api.slugs import slugify

COLUMNS = (
    "externalId",
    "title",
    "answer",
    "category",
    "status",
    "slug",
    "order",
    "locale",
    "createdAt",
    "updatedAt",
)
REQUIRED = ("title", "answer")
MAX_FIELD = 200_000  # characters of one cell


def _rows(file: BinaryIO) -> Iterator[tuple[int, dict[str, str]]]:
    file.seek(0)
    text = io.TextIOWrapper(file, encoding="utf-8-sig", newline="")  # type: ignore[arg-type]
    reader = csv.reader(text, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise MalformedUpload("the file is empty: expected a header row")
        header = [name.strip() for name in header]
        unknown = [name for name in header if name not in COLUMNS]
        if unknown:
            raise MalformedUpload(
                f"line 1: unknown column {unknown[0]!r} (columns: {', '.join(COLUMNS)})"
            )
        missing = [name for name in REQUIRED if name not in header]
        if missing:
            raise MalformedUpload(f"line 1: the header has no {missing[0]!r} column")
        if len(set(header)) != len(header):
            raise MalformedUpload("line 1: a column is named twice")
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise MalformedUpload(
                    f"line {reader.line_num}: {len(row)} fields, the header has {len(header)}"
                )
            yield reader.line_num, dict(zip(header, row, strict=True))
    except csv.Error as exc:
        raise MalformedUpload(f"line {reader.line_num}: {exc}") from None
    except UnicodeDecodeError:
        raise MalformedUpload(f"line {reader.line_num + 1}: not UTF-8 text") from None
    finally:
        text.detach()


def _source(row: dict[str, str]) -> str:
    if row.get("externalId"):
        return row["externalId"].strip()
    return "csv:" + (row.get("slug") or slugify(row.get("title", ""), 200))


def parse(file: BinaryIO, ctx: ParseContext) -> Iterator[Item]:
    default = ctx.default_locale.lower()
    csv.field_size_limit(MAX_FIELD)
    for line, row in _rows(file):
        locale = (row.get("locale") or "").strip()
        if locale and locale.lower() != default:
            continue
        order_text = (row.get("order") or "0").strip() or "0"
        try:
            order = int(order_text)
        except ValueError:
            yield Invalid(f"line {line}", "order", f"{order_text!r} is not an integer")
            continue
        question = QuestionItem(
            source=_source(row),
            title=row["title"],
            answer=row["answer"],
            status=(row.get("status") or "draft").strip() or "draft",
            category_ref=(row.get("category") or "").strip() or None,
            slug=(row.get("slug") or "").strip() or None,
            order=order,
        )
        keep_times(question, row.get("createdAt"), row.get("updatedAt"))
        yield question
    for line, row in _rows(file):
        locale = (row.get("locale") or "").strip()
        if not locale or locale.lower() == default:
            continue
        if not row.get("externalId"):
            yield Invalid(
                f"line {line}",
                "externalId",
                "a translation row needs the externalId",
                "translations",
            )
            continue
        yield TranslationItem(
            kind="question",
            source=row["externalId"].strip(),
            locale=locale,
            fields={"title": row["title"], "answer": row["answer"]},
            status=(row.get("status") or "").strip() or None,
        )
