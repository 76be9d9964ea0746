"""Vendor HTML converted in a process of its own, ahead of the writer: the parser thread hands
each body to the converter and goes on; ``ParseContext.resolved`` waits for a body only when
its item is due (at most ``LOOKAHEAD`` items later). Conversion is most of an import's CPU:
off the worker's process, it no longer competes with the writer for the interpreter."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from api.imports.html import linked_markdown
from api.imports.links import Link
from api.search import searchable
from tenancy.priority import NICENESS

LOOKAHEAD = 128  # items parsed whose bodies may be converting at once, at most
CONVERT_BATCH = 16  # bodies sent to a converter in one message (a message per body cost a
# quarter of the converters' CPU in pickling, locks and pipes)
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def converters() -> ProcessPoolExecutor:
    """This process's converters (made on first use; spawned, so no lock or connection of
    this process is inherited): one per core, at most four. The writer mostly waits for
    PostgreSQL meanwhile, so a core each keeps the converters ahead of it."""
    global _pool
    with _lock:
        if _pool is None:
            workers = max(1, min(4, os.cpu_count() or 2))
            _pool = ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=os.nice,
                initargs=(NICENESS,),
            )
        return _pool


# (Markdown, issues, links); None: failed, issues[0] says why
Converted = tuple[str | None, list[str], list[Link]]


def convert(html: str, rules: str | None = None) -> Converted:
    """``to_markdown(html)``, a failure kept to its body (issue 42: one article's HTML that the
    converter could not read failed the whole job, half of it written)."""
    try:
        return linked_markdown(html, rules)
    except Exception as exc:  # any converter failure is this body's, reported with its item
        return None, [f"its HTML cannot be converted ({type(exc).__name__}: {exc})"[:300]], []


def markdown_of_each(htmls: list[str], rules: str | None = None) -> list[Converted]:
    """``convert`` of each body of a batch, in a converter process."""
    return [convert(html, rules) for html in htmls]


def words_of(texts: list[str]) -> list[str]:
    """``searchable`` of each text (the words a question is indexed by), run in a converter
    process for a whole batch: folding an answer costs about as much as writing it."""
    return [searchable(text) for text in texts]


async def words_in_converters(texts: list[str]) -> list[str]:
    """``words_of(texts)`` in a converter process, the loop free meanwhile (here when the
    converters are gone)."""
    try:
        return await asyncio.get_running_loop().run_in_executor(converters(), words_of, texts)
    except BrokenProcessPool:
        return words_of(texts)
