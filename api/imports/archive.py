"""Reading a zip upload (Markdown files, our bundles) without trusting it (issue 42).

Every bound is checked before the work it bounds, or counted while inflating, never after:

- the member count, from the archive's end record, before its directory is read
  (``MAX_MEMBERS``; Python's ``zipfile`` keeps an object per member);
- the compression method of every member: stored or deflate only (bzip2 and LZMA inflate a
  whole block at once, whatever the reader asks for);
- the bytes one member inflates to: at most ``MAX_MEMBER_RATIO`` times its compressed size
  (plus ``RATIO_SLACK``), counted as they come;
- the bytes all members inflate to together: the import's ``inflate_limit`` (by plan,
  ``billing.plans.import_inflated_bytes``), counted as they come;
- a file, a line or the manifest: ``MAX_MEMBER_BYTES``.

NDJSON is read in blocks and split into lines in bulk, so a member of blank lines costs what
its bytes cost, not a Python step per line.
"""

from __future__ import annotations

import re
import struct
import zipfile
from collections.abc import Iterator
from typing import BinaryIO

import orjson

from api.imports.items import MalformedUpload

MAX_MEMBER_BYTES = 2 * 2**20  # one Markdown file, one NDJSON line, the manifest
MAX_MEMBERS = 50_000  # files in one archive
MAX_MEMBER_RATIO = 100  # inflated bytes per compressed byte of one member (text: ~3 to 20)
RATIO_SLACK = 2**20  # small members may inflate more (a file of one repeated line)
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
BLOCK = 64 * 1024

_END = b"PK\x05\x06"  # end of central directory record (22 bytes and a comment)
_END64_LOCATOR = b"PK\x06\x07"  # zip64 end locator (20 bytes, just before the record)
_END64 = b"PK\x06\x06"


def member_count(file: BinaryIO) -> int:
    """The number of members the archive's end record declares (zip64 included), read from
    its last 64 KiB; MalformedUpload if there is no such record."""
    file.seek(0, 2)
    size = file.tell()
    tail_start = max(0, size - (22 + 65_535 + 20))
    file.seek(tail_start)
    tail = file.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < 22:
        raise MalformedUpload("not a zip file (no end of central directory record)")
    (count,) = struct.unpack("<H", tail[at + 10 : at + 12])
    if count != 0xFFFF:
        return int(count)
    locator = tail[at - 20 : at] if at >= 20 else b""
    if not locator.startswith(_END64_LOCATOR):
        raise MalformedUpload("not a zip file (zip64 record missing)")
    (offset,) = struct.unpack("<Q", locator[8:16])
    file.seek(offset)
    record = file.read(56)
    if len(record) < 56 or not record.startswith(_END64):
        raise MalformedUpload("not a zip file (zip64 record unreadable)")
    (count64,) = struct.unpack("<Q", record[32:40])
    return int(count64)


class Archive:
    """A checked zip: its member names, and its members read with every bound above."""

    def __init__(self, file: BinaryIO, inflate_limit: int) -> None:
        count = member_count(file)
        if count > MAX_MEMBERS:
            raise MalformedUpload(f"more than {MAX_MEMBERS} files in the archive ({count})")
        file.seek(0)
        try:
            self.zip = zipfile.ZipFile(file)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
            raise MalformedUpload(f"not a zip file ({exc})") from None
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise MalformedUpload(f"more than {MAX_MEMBERS} files in the archive")
        for info in infos:
            if info.compress_type not in METHODS:
                raise MalformedUpload(
                    f"{info.filename}: compression method {info.compress_type} is not accepted "
                    "(only stored and deflate)"
                )
        self.inflate_limit = inflate_limit
        self.inflated = 0  # bytes inflated so far, all members together
        self._names = [info.filename for info in infos]

    def namelist(self) -> list[str]:
        return list(self._names)

    def blocks(self, name: str) -> Iterator[bytes]:
        """The member's bytes in blocks, counted against both budgets as they inflate."""
        info = self.zip.getinfo(name)
        allowed = info.compress_size * MAX_MEMBER_RATIO + RATIO_SLACK
        out = 0
        try:
            with self.zip.open(info) as member:
                while block := member.read(BLOCK):
                    out += len(block)
                    self.inflated += len(block)
                    if out > allowed:
                        raise MalformedUpload(
                            f"{name}: inflates to more than {MAX_MEMBER_RATIO} times its "
                            "compressed size"
                        )
                    if self.inflated > self.inflate_limit:
                        raise MalformedUpload(
                            f"the archive inflates to more than {self.inflate_limit} bytes "
                            "(this plan's limit)"
                        )
                    yield block
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise MalformedUpload(f"{name}: cannot be read ({exc})") from None

    def read(self, name: str) -> bytes:
        """A whole member of at most ``MAX_MEMBER_BYTES`` (checked on its declared size, then
        on what it inflates to)."""
        if self.zip.getinfo(name).file_size > MAX_MEMBER_BYTES:
            raise MalformedUpload(f"{name}: larger than {MAX_MEMBER_BYTES} bytes")
        parts: list[bytes] = []
        size = 0
        for block in self.blocks(name):
            size += len(block)
            if size > MAX_MEMBER_BYTES:
                raise MalformedUpload(f"{name}: larger than {MAX_MEMBER_BYTES} bytes")
            parts.append(block)
        return b"".join(parts)

    def lines(self, name: str) -> Iterator[tuple[int, bytes]]:
        """The member's non-blank lines with their numbers (from 1), each at most
        ``MAX_MEMBER_BYTES``. Blank lines are skipped by a search in C (``_VISIBLE``), not
        one Python step each."""
        done = 0  # lines of the member before ``carry``
        carry = b""
        for block in self.blocks(name):
            data = carry + block
            end = data.rfind(b"\n")
            if end < 0:
                carry = data
            else:
                yield from _visible_lines(data[:end], done)
                done += data.count(b"\n", 0, end) + 1
                carry = data[end + 1 :]
            if len(carry) > MAX_MEMBER_BYTES:
                raise MalformedUpload(f"{name} line {done + 1}: longer than {MAX_MEMBER_BYTES}")
        yield from _visible_lines(carry, done)


_VISIBLE = re.compile(rb"\S")


def _visible_lines(body: bytes, before: int) -> Iterator[tuple[int, bytes]]:
    """The lines of ``body`` (no final newline) holding a visible character, numbered after
    ``before``."""
    number = before + 1
    position = 0
    while found := _VISIBLE.search(body, position):
        start = body.rfind(b"\n", 0, found.start()) + 1
        number += body.count(b"\n", position, start)
        end = body.find(b"\n", found.start())
        end = len(body) if end < 0 else end
        yield number, body[start:end]
        position = end


def open_zip(file: BinaryIO, inflate_limit: int) -> Archive:
    return Archive(file, inflate_limit)


def read_member(archive: Archive, name: str) -> bytes:
    return archive.read(name)


def ndjson(archive: Archive, name: str) -> Iterator[tuple[int, dict[str, object]]]:
    """Each line of ``name`` (absent: none) as a JSON object, with its line number."""
    if name not in archive.namelist():
        return
    for number, line in archive.lines(name):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise MalformedUpload(f"{name} line {number}: invalid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise MalformedUpload(f"{name} line {number}: not a JSON object")
        yield number, value
