"""Reading a zip upload (Markdown files, our bundles) without trusting it: member sizes are
checked before reading, lines and files are read with a bound."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import BinaryIO

import orjson

from api.imports.items import MalformedUpload

MAX_MEMBER_BYTES = 2 * 2**20  # one Markdown file, one NDJSON line, the manifest


def open_zip(file: BinaryIO) -> zipfile.ZipFile:
    file.seek(0)
    try:
        return zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise MalformedUpload(f"not a zip file ({exc})") from None


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    info = archive.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise MalformedUpload(f"{name}: larger than {MAX_MEMBER_BYTES} bytes")
    try:
        with archive.open(info) as member:
            return member.read(MAX_MEMBER_BYTES + 1)[:MAX_MEMBER_BYTES]
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise MalformedUpload(f"{name}: cannot be read ({exc})") from None


def ndjson(archive: zipfile.ZipFile, name: str) -> Iterator[tuple[int, dict[str, object]]]:
    """Each line of ``name`` (absent: none) as a JSON object, with its line number."""
    if name not in archive.namelist():
        return
    with archive.open(name) as lines:
        number = 0
        while True:
            line = lines.readline(MAX_MEMBER_BYTES + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_MEMBER_BYTES:
                raise MalformedUpload(f"{name} line {number}: longer than {MAX_MEMBER_BYTES}")
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise MalformedUpload(f"{name} line {number}: invalid JSON ({exc})") from None
            if not isinstance(value, dict):
                raise MalformedUpload(f"{name} line {number}: not a JSON object")
            yield number, value
