"""An import's upload: stored in PostgreSQL in ``CHUNK_BYTES`` pieces as it arrives (API and
worker processes share only PostgreSQL and Redis), and read back as a seekable file by a
parser running in a thread, one piece at a time, fetched on the event loop.

So neither the request nor the actor ever holds more than a piece of the upload (plus what
the parser holds of one item): the parsers (``ijson``, ``csv``, ``zipfile``) read a file."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.errors import PayloadTooLarge
from api.imports.items import Item
from api.imports.models import ImportChunk
from tenancy.db import tenant_session

CHUNK_BYTES = 1 << 20
QUEUE_ITEMS = 64  # items parsed ahead of the writer, at most
# Parsers run in threads of their own: a long parse never takes a thread of the loop's default
# pool (``asyncio.to_thread``: broker sends, XLIFF, ...); more uploads at once wait here.
PARSER_THREADS = 4
_parsers: ThreadPoolExecutor | None = None


def _parser_pool() -> ThreadPoolExecutor:
    global _parsers
    if _parsers is None:
        _parsers = ThreadPoolExecutor(PARSER_THREADS, thread_name_prefix="import-parser")
    return _parsers


async def store_upload(
    session: AsyncSession, import_id: str, body: AsyncIterator[bytes], limit: int
) -> int:
    """Write the body in pieces of ``CHUNK_BYTES`` as it arrives; past ``limit`` bytes, 413
    (the request's transaction rolls back what was written). Returns its size."""
    pending = bytearray()
    size = 0
    seq = 0
    async for data in body:
        size += len(data)
        if size > limit:
            raise PayloadTooLarge(
                f"The upload exceeds this plan's limit of {limit} bytes.",
                details=[{"field": "body", "issue": f"larger than {limit} bytes"}],
            )
        pending.extend(data)
        while len(pending) >= CHUNK_BYTES:
            await _write(session, import_id, seq, bytes(pending[:CHUNK_BYTES]))
            del pending[:CHUNK_BYTES]
            seq += 1
    if pending or seq == 0:
        await _write(session, import_id, seq, bytes(pending))
    return size


async def _write(session: AsyncSession, import_id: str, seq: int, data: bytes) -> None:
    await session.execute(insert(ImportChunk).values(import_id=import_id, seq=seq, data=data))


async def drop_upload(session: AsyncSession, import_id: str) -> None:
    await session.execute(delete(ImportChunk).where(ImportChunk.import_id == import_id))


class ParseStopped(Exception):
    """Raised in the parser's thread by its next read once nobody waits for its items."""


class UploadReader(io.RawIOBase):
    """The stored upload as a seekable binary file, for a parser in a thread: each missing
    piece is fetched by ``fetch(seq)`` on ``loop`` (the thread waits, the loop runs on). Once
    ``stop_reading`` was called, every read raises ``ParseStopped``: a parser that reads on
    without producing an item (blank lines, a long value) stops at its next read."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fetch: Callable[[int], Any],
        size: int,
    ) -> None:
        self._loop = loop
        self._fetch = fetch
        self._size = size
        self._pos = 0
        self._seq = -1
        self._piece = b""
        self._stopped = False

    def stop_reading(self) -> None:
        self._stopped = True

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    @property
    def size(self) -> int:
        return self._size

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        if self._stopped:
            raise ParseStopped()
        if self._pos >= self._size:
            return 0
        seq, offset = divmod(self._pos, CHUNK_BYTES)
        if seq != self._seq:
            future = asyncio.run_coroutine_threadsafe(self._fetch(seq), self._loop)
            self._piece = future.result()
            self._seq = seq
        view = memoryview(buffer)
        data = self._piece[offset : offset + len(view)]
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)


def chunk_fetcher(engine: AsyncEngine, schema: str, import_id: str) -> Callable[[int], Any]:
    async def fetch(seq: int) -> bytes:
        async with tenant_session(engine, schema) as session:
            data = (
                await session.execute(
                    select(ImportChunk.data).where(
                        ImportChunk.import_id == import_id, ImportChunk.seq == seq
                    )
                )
            ).scalar_one()
            await session.rollback()
            return bytes(data)

    return fetch


Parser = Callable[[BinaryIO], Iterator[Item]]
_DONE = object()


async def parse_in_thread(reader: UploadReader, parser: Parser) -> AsyncGenerator[Item, None]:
    """The parser's items, parsed in a thread and handed over through a bounded queue (a
    ``MalformedUpload`` it raises is raised here). Closing the iteration early (the request's
    client went away, the job was cancelled) stops the parser at its next item or read."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue(QUEUE_ITEMS)
    stop = False

    def put(value: Any) -> None:
        asyncio.run_coroutine_threadsafe(queue.put(value), loop).result()

    def work() -> None:
        try:
            for item in parser(io.BufferedReader(reader)):
                if stop:
                    return
                put(item)
        except ParseStopped:
            return
        except Exception as exc:  # handed to the loop, raised there
            put(exc)
        put(_DONE)

    task = loop.run_in_executor(_parser_pool(), work)
    try:
        while True:
            value = await queue.get()
            if value is _DONE:
                break
            if isinstance(value, BaseException):
                raise value
            yield value
    finally:
        stop = True
        reader.stop_reading()
        while not task.done():  # let a blocked put finish
            while not queue.empty():
                queue.get_nowait()
            await asyncio.sleep(0.01)
        await task
