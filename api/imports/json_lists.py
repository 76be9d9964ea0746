"""Vendor exports as one JSON object holding each list endpoint's response under the list's
name: the objects of one list, streamed (``ijson``), whatever wrapper the vendor put around
it (a bare list, Intercom's ``{"type": "list", "data": [...]}``, Help Scout's ``{"items":
[...]}``, or the whole endpoint response under the list's name)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

import ijson

from api.imports.items import MalformedUpload


def list_prefixes(name: str, inner: tuple[str, ...] = ()) -> set[str]:
    """The ijson prefixes of the elements of list ``name``: ``name.item``, ``name.data.item``,
    ``name.items.item``, ``name.<name>.item``, ``name.<name>.items.item`` and, for each wrapper
    key in ``inner`` (Help Scout's ``article``), each of those followed by ``.<key>``."""
    bases = {
        f"{name}.item",
        f"{name}.data.item",
        f"{name}.items.item",
        f"{name}.{name}.item",
        f"{name}.{name}.items.item",
    }
    return bases | {f"{base}.{key}" for base in bases for key in inner}


LOCATE_CHUNK = 4096  # bytes fed at a time while locating a syntax error


def _feed(file: BinaryIO, fail_at: int | None = None) -> tuple[int | None, dict[str, Any]]:
    """Push the file through ijson (its C parser) ``LOCATE_CHUNK`` bytes at a time, and chunk
    number ``fail_at`` a byte at a time; returns where it failed (the chunk's number, or with
    ``fail_at`` the byte's offset; None if it did not) and what was last seen there: the line
    and column, and the top-level list item (its list, place and id)."""
    file.seek(0)
    events = ijson.sendable_list()
    parser = ijson.parse_coro(events)
    seen: dict[str, Any] = {"line": 1, "line_start": 0, "list": None, "index": -1, "id": None}
    offset = 0
    number = 0
    failed_at = 0  # the byte being fed (with ``fail_at``); at the end: premature end

    def send(piece: bytes) -> None:
        parser.send(piece)
        for prefix, event, value in events:
            parts = prefix.split(".")
            if event == "start_map" and len(parts) >= 2 and parts[-1] == "item":
                if parts[0] != seen["list"]:
                    seen["list"], seen["index"] = parts[0], -1
                if prefix.count(".item") == 1:
                    seen["index"] += 1
                    seen["id"] = None
            elif prefix.endswith(".item.id") and prefix.count(".item") == 1:
                seen["id"] = value
        del events[:]

    def count_lines(piece: bytes, at: int) -> None:
        newlines = piece.count(b"\n")
        if newlines:
            seen["line"] += newlines
            seen["line_start"] = at + piece.rindex(b"\n") + 1

    try:
        while chunk := file.read(LOCATE_CHUNK):
            if number == fail_at:
                for i in range(len(chunk)):
                    failed_at = offset + i
                    send(chunk[i : i + 1])
                    count_lines(chunk[i : i + 1], offset + i)
            else:
                send(chunk)
                count_lines(chunk, offset)
            offset += len(chunk)
            number += 1
        failed_at = offset
        parser.close()
    except ijson.JSONError:
        return (number if fail_at is None else failed_at), seen
    return None, seen


def located(file: BinaryIO, exc: Exception) -> MalformedUpload:
    """The 400 for a syntax error, naming its line and column (and the list item it is in,
    with the item's id once read), not only a byte: found by pushing the upload through the
    parser again, the failing 4 KiB a byte at a time (two passes of C parsing, on errors
    only)."""
    chunk, _ = _feed(file)
    if chunk is None:  # the first pass failed where this one does not: say what it said
        return MalformedUpload(f"invalid JSON: {str(exc).splitlines()[0]}")
    at, seen = _feed(file, fail_at=chunk)
    column = (at or 0) - seen["line_start"] + 1
    where = f"line {seen['line']}, column {column}"
    if seen["list"] is not None and seen["index"] >= 0:
        named = f" (id {str(seen['id'])[:40]})" if seen["id"] is not None else ""
        where += f", in {seen['list']}[{seen['index']}]{named}"
    problem = str(exc).splitlines()[0].removeprefix("parse error: ")
    return MalformedUpload(f"invalid JSON at {where}: {problem}")


MAX_ITEM_VALUES = 10_000  # JSON values (scalars, objects, lists) of one item
MAX_ITEM_BYTES = 8 * 2**20  # of the file read while building one item (ijson reads 64 KiB at once)


MAX_DEPTH = 64  # JSON nesting of a vendor export (theirs: under 10)
MAX_KEY_CHARS = 256  # one object key


def top_level_keys(file: BinaryIO, allowed: set[str]) -> None:
    """Refuse an upload that is not a JSON object of the format's lists (one streamed pass,
    which is also the syntax check), or that nests deeper than ``MAX_DEPTH`` or has a key
    longer than ``MAX_KEY_CHARS`` (an item's own bounds are ``objects``': where items sit
    depends on the vendor's wrapper, which only prefixes say). Events without their prefix
    (``basic_parse``): ijson builds each event's prefix from the keys above it, and 2,000,000
    ``[`` (2 MB) made prefixes of every length, 24 GB before the kernel killed the process
    (issue 42). The later passes (``objects``) run only on files this one accepted."""
    file.seek(0)
    first = True
    depth = 0
    try:
        for event, value in ijson.basic_parse(file):
            if first:
                if event != "start_map":
                    raise MalformedUpload("the body must be a JSON object of lists")
                first = False
            if event in ("start_map", "start_array"):
                depth += 1
                if depth > MAX_DEPTH:
                    raise MalformedUpload(f"JSON nested deeper than {MAX_DEPTH} levels")
            elif event in ("end_map", "end_array"):
                depth -= 1
            elif event == "map_key":
                if len(value) > MAX_KEY_CHARS:
                    raise MalformedUpload(f"a JSON key longer than {MAX_KEY_CHARS} characters")
                if depth == 1 and value not in allowed:
                    names = ", ".join(sorted(allowed))
                    raise MalformedUpload(f"unknown top-level key {value!r} (expected {names})")
    except ijson.JSONError as exc:
        raise located(file, exc) from None
    if first:
        raise MalformedUpload("the body is empty")


def objects(file: BinaryIO, prefixes: set[str], what: str) -> Iterator[dict[str, Any]]:
    """Each JSON object found at one of ``prefixes``, built one at a time, each bounded while it
    streams (issue 42: one article of 2.7 million ``[]`` cost 5.6 s and 28 times the upload):
    at most ``MAX_ITEM_VALUES`` values and ``MAX_ITEM_BYTES`` of the file, else a
    MalformedUpload naming the item (its place in the list, and its id once read)."""
    file.seek(0)
    builder: Any = None
    depth = 0
    index = 0
    values = 0
    started = 0
    item_id: Any = None
    try:
        for prefix, event, value in ijson.parse(file, use_float=True):
            if builder is None:
                if prefix in prefixes and event in ("start_map", "start_array"):
                    if event == "start_array" and prefix.endswith(".item") is False:
                        continue
                    builder = ijson.ObjectBuilder()
                    depth = values = 0
                    started = file.tell()
                    item_id = None
                elif prefix in prefixes and event not in ("end_map", "end_array"):
                    raise MalformedUpload(f"{what}[{index}]: not a JSON object")
                else:
                    continue
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
            elif depth == 1 and event != "map_key" and prefix.endswith(".id"):
                item_id = value
            if event != "map_key":
                values += 1
                if values > MAX_ITEM_VALUES or file.tell() - started > MAX_ITEM_BYTES:
                    named = f" (id {str(item_id)[:40]})" if item_id is not None else ""
                    limit = (
                        f"{MAX_ITEM_VALUES} JSON values"
                        if values > MAX_ITEM_VALUES
                        else f"{MAX_ITEM_BYTES} bytes"
                    )
                    raise MalformedUpload(f"{what}[{index}]{named}: more than {limit}")
            if depth == 0:
                built = builder.value
                builder = None
                if not isinstance(built, dict):
                    raise MalformedUpload(f"{what}[{index}]: not a JSON object")
                index += 1
                yield built
    except ijson.JSONError as exc:
        raise located(file, exc) from None


def text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def integer(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(-1_000_000_000, min(1_000_000_000, int(value)))
