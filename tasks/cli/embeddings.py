"""``faq embeddings backfill [SLUG]``: embed every question of one org (or of every org) with
the configured embedder, in bounded batches, in this process; after a model change, the
previous model's rows are removed once the new ones are written. Safe to run again: text
already embedded by the same model is skipped by its hash."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tasks.cli.runner import run_with_engine

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def add_embeddings_parser(sub: Any) -> None:
    embeddings = sub.add_parser("embeddings", help="question embeddings (semantic search)")
    commands = embeddings.add_subparsers(dest="embeddings_command", required=True)
    backfill = commands.add_parser(
        "backfill", help="embed every question of SLUG (default: of every org)"
    )
    backfill.add_argument("slug", nargs="?")
    backfill.set_defaults(func=cmd_embeddings_backfill)


async def backfill_orgs(engine: AsyncEngine, slug: str | None) -> list[str]:
    """One line per org: what was embedded, left as it was and removed."""
    from sqlalchemy import select

    from api.answers.semantic import semantic_status
    from tasks.embeddings import backfill_org
    from tenancy.db import shared_session
    from tenancy.models import Organization
    from tenancy.orgs import get_org

    status = await semantic_status(engine)
    if not status.available:
        return [f"semantic search is off here ({status.reason}): nothing to embed"]
    if slug is not None:
        orgs = [((await get_org(engine, slug)).id, slug)]
    else:
        async with shared_session(engine) as session:
            rows = await session.execute(
                select(Organization.id, Organization.slug).order_by(Organization.slug)
            )
            orgs = [(row.id, row.slug) for row in rows]
    lines = []
    for org_id, org_slug in orgs:
        counts = await backfill_org(engine, org_id)
        lines.append(
            f"{org_slug}: {counts.embedded} embedded, {counts.unchanged} unchanged, "
            f"{counts.deleted} removed"
        )
    return lines


def cmd_embeddings_backfill(args: argparse.Namespace) -> int:
    from tenancy.orgs import OrgNotFound
    from tenancy.process_logging import configure_process_logging
    from tenancy.settings import get_settings

    # Each org's start, progress and end lines on stderr; stdout is the summary.
    configure_process_logging(get_settings().faq_log_level, stream=sys.stderr)

    async def work(engine: AsyncEngine) -> list[str]:
        return await backfill_orgs(engine, args.slug)

    try:
        lines = run_with_engine(work)
    except OrgNotFound:
        print(f"no org {args.slug!r}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
