"""A parse nobody waits for stops (issue 42): a 373-byte zip of blank lines burned 15.5 s of CPU
after its client gave up at 3 s, because the parser's thread checked for a stop only between
items, and a parser reading blank lines produces none. Now its next read stops it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, BinaryIO

from api.imports.upload import CHUNK_BYTES, UploadReader, parse_in_thread

PIECES = 64  # a 64 MiB upload, read a piece at a time


async def test_closing_the_items_stops_a_parser_that_reads_without_yielding() -> None:
    fetched: list[int] = []

    async def fetch(seq: int) -> bytes:
        fetched.append(seq)
        await asyncio.sleep(0.01)  # a round trip to PostgreSQL
        return b"\n" * CHUNK_BYTES

    def parser(file: BinaryIO) -> Iterator[Any]:
        yield "first"
        while file.read(65_536):  # blank lines: read on, nothing to hand over
            pass
        yield "last"

    reader = UploadReader(asyncio.get_running_loop(), fetch, PIECES * CHUNK_BYTES)
    items = parse_in_thread(reader, parser)  # type: ignore[arg-type]
    assert await anext(items) == "first"
    await items.aclose()  # what a request's cancellation or a cancelled job does
    read = len(fetched)
    await asyncio.sleep(0.3)
    assert len(fetched) == read, "the parser read on after its items were closed"
    assert read < PIECES // 4, read


async def test_a_parse_that_is_waited_for_reads_to_the_end() -> None:
    async def fetch(seq: int) -> bytes:
        return b"x" * CHUNK_BYTES

    def parser(file: BinaryIO) -> Iterator[Any]:
        total = 0
        while block := file.read(65_536):
            total += len(block)
        yield total

    reader = UploadReader(asyncio.get_running_loop(), fetch, 3 * CHUNK_BYTES)
    assert [n async for n in parse_in_thread(reader, parser)] == [3 * CHUNK_BYTES]  # type: ignore[arg-type]
