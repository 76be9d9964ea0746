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


def top_level_keys(file: BinaryIO, allowed: set[str]) -> None:
    """Refuse an upload that is not a JSON object of the format's lists (one streamed pass,
    which is also the syntax check)."""
    file.seek(0)
    first = True
    try:
        for prefix, event, value in ijson.parse(file):
            if first:
                if event != "start_map":
                    raise MalformedUpload("the body must be a JSON object of lists")
                first = False
            elif prefix == "" and event == "map_key" and value not in allowed:
                names = ", ".join(sorted(allowed))
                raise MalformedUpload(f"unknown top-level key {value!r} (expected {names})")
    except ijson.JSONError as exc:
        raise MalformedUpload(f"invalid JSON near byte {file.tell()}: {exc}") from None
    if first:
        raise MalformedUpload("the body is empty")


MAX_ITEM_VALUES = 10_000  # JSON values (scalars, objects, lists) of one item
MAX_ITEM_BYTES = 8 * 2**20  # of the file read while building one item (ijson reads 64 KiB at once)


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
        raise MalformedUpload(f"invalid JSON near byte {file.tell()}: {exc}") from None


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
