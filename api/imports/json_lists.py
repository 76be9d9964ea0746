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


def objects(file: BinaryIO, prefixes: set[str], what: str) -> Iterator[dict[str, Any]]:
    """Each JSON object found at one of ``prefixes``, built one at a time."""
    file.seek(0)
    builder: Any = None
    depth = 0
    index = 0
    try:
        for prefix, event, value in ijson.parse(file, use_float=True):
            if builder is None:
                if prefix in prefixes and event in ("start_map", "start_array"):
                    if event == "start_array" and prefix.endswith(".item") is False:
                        continue
                    builder = ijson.ObjectBuilder()
                    depth = 0
                elif prefix in prefixes and event not in ("end_map", "end_array"):
                    raise MalformedUpload(f"{what} {index}: not a JSON object")
                else:
                    continue
            builder.event(event, value)
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
            if depth == 0:
                built = builder.value
                builder = None
                if not isinstance(built, dict):
                    raise MalformedUpload(f"{what} {index}: not a JSON object")
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
