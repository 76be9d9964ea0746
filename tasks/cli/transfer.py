"""``faq import SLUG FILE --format F [--dry-run]`` and ``faq export SLUG FILE``: the same code
as ``POST /imports`` and ``POST /exports`` (the file stored, checked, then read into the org in
batches; the bundle built), run in this process with a progress bar on stderr. The report is
printed as JSON. Exit status: 0 succeeded, 2 succeeded with failed items, 1 refused or failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.cli.runner import run_with_engine

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

FORMATS = ["zendesk", "intercom", "helpscout", "csv", "markdown", "faq"]
READ_BYTES = 1 << 20


def add_transfer_parsers(sub: Any) -> None:
    imports = sub.add_parser("import", help="import a file into an org (as POST /imports)")
    imports.add_argument("slug")
    imports.add_argument("file", type=Path)
    imports.add_argument("--format", required=True, choices=FORMATS)
    imports.add_argument("--dry-run", action="store_true", help="report; write nothing")
    imports.add_argument(
        "--per-question-events", action="store_true", help="the usual events as well"
    )
    imports.set_defaults(func=cmd_import)
    exports = sub.add_parser("export", help="write an org's bundle to a file (as POST /exports)")
    exports.add_argument("slug")
    exports.add_argument("file", type=Path)
    exports.add_argument("--revisions", action="store_true", help="each question's revisions too")
    exports.set_defaults(func=cmd_export)


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    import asyncio

    with path.open("rb") as file:
        while data := await asyncio.to_thread(file.read, READ_BYTES):
            yield data


async def import_file(engine: AsyncEngine, args: argparse.Namespace) -> dict[str, Any]:
    from tqdm import tqdm

    from api.imports.formats import FORMATS as KNOWN
    from api.imports.run import run_import
    from api.imports.service import create_import
    from api.jobs import org_context
    from billing.plans import Plan, import_upload_bytes
    from tenancy.audit import system_actor
    from tenancy.db import tenant_session
    from tenancy.orgs import get_org
    from tenancy.transactions import commit, discard_after_commit

    info = await get_org(engine, args.slug)
    org = await org_context(engine, info.id, system_actor("cli"))
    async with tenant_session(engine, org.schema_name) as session:
        job = await create_import(
            session,
            org,
            format_name=args.format,
            media_type=sorted(KNOWN[args.format].media_types)[0],
            dry_run=args.dry_run,
            per_question_events=args.per_question_events,
            body=_chunks(args.file),
            limit=import_upload_bytes(Plan(org.plan)),
        )
        discard_after_commit(session)  # run here, not by a worker
        await commit(session)
    with tqdm(total=job["progress"]["bytesTotal"], unit="B", unit_scale=True) as bar:

        def progress(read: int, _items: int) -> None:
            bar.update(read - bar.n)

        report = await run_import(engine, info.id, job["id"], progress)
        bar.update(bar.total - bar.n)
    assert report is not None
    return report


def cmd_import(args: argparse.Namespace) -> int:
    from tenancy.errors import ServiceError
    from tenancy.orgs import OrgNotFound
    from tenancy.priority import NICENESS
    from tenancy.process_logging import configure_process_logging
    from tenancy.settings import get_settings

    # Batch work: the command yields the CPU to requests (of every org) when it is short,
    # as its converter processes do; alone on the machine it runs as fast.
    os.nice(NICENESS)
    # stdout is the report: the import's start, progress and end lines go to stderr, with
    # the bar.
    configure_process_logging(get_settings().faq_log_level, stream=sys.stderr)

    async def work(engine: AsyncEngine) -> dict[str, Any]:
        return await import_file(engine, args)

    try:
        report = run_with_engine(work)
    except OrgNotFound:
        print(f"no org {args.slug!r}", file=sys.stderr)
        return 1
    except ServiceError as exc:
        print(f"refused: {exc.message}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if report["status"] != "succeeded":
        return 1
    return 2 if report["counts"]["failed"] else 0


async def export_file(engine: AsyncEngine, args: argparse.Namespace) -> dict[str, Any]:
    import asyncio

    from api.exports.build import run_export
    from api.exports.service import bundle_pieces, create_export, download_plan, get_export
    from api.jobs import org_context
    from tenancy.audit import system_actor
    from tenancy.db import tenant_session
    from tenancy.orgs import get_org
    from tenancy.transactions import commit, discard_after_commit

    info = await get_org(engine, args.slug)
    org = await org_context(engine, info.id, system_actor("cli"))
    async with tenant_session(engine, org.schema_name) as session:
        job = await create_export(session, org, args.revisions)
        discard_after_commit(session)
        await commit(session)
    await run_export(engine, info.id, job["id"])
    async with tenant_session(engine, org.schema_name) as session:
        job = await get_export(session, org, job["id"])
        pieces = await download_plan(session, job["id"]) if job["status"] == "succeeded" else 0
        await session.rollback()
    with args.file.open("wb") as out:
        async for piece in bundle_pieces(engine, org.schema_name, job["id"], pieces):
            await asyncio.to_thread(out.write, piece)
    return job


def cmd_export(args: argparse.Namespace) -> int:
    from tenancy.orgs import OrgNotFound

    async def work(engine: AsyncEngine) -> dict[str, Any]:
        return await export_file(engine, args)

    try:
        job = run_with_engine(work)
    except OrgNotFound:
        print(f"no org {args.slug!r}", file=sys.stderr)
        return 1
    print(json.dumps(job, indent=2))
    return 0 if job["status"] == "succeeded" else 1
