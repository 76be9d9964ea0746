"""Seeding: orgs through the real provisioning code (``tenancy.orgs.create_org``, what
``faq orgs create`` runs), in several processes at once, and questions in bulk SQL.

Alembic's ``op``/``context`` are process-wide proxies, so orgs are created by processes in
parallel, each sequential inside. Each process writes one JSON line per org (slug, key,
schema, ids) to its own file.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ANSWER = (
    "To reset your password open Settings, choose Security and follow the link we e-mail "
    "you. The link is valid for one hour; if it expires, ask for a new one. Accounts with "
    "single sign-on change their password with their identity provider instead."
)


def question_rows_sql(schema: str, count: int, prefix: str = "") -> str:
    """Bulk insert of ``count`` published questions in the org's default category."""
    return (
        f'INSERT INTO "{schema}".questions (id, slug, title, answer, status, category_id, '
        "sort_order, published_at, search_vector, revision_count, created_at, updated_at) "
        f"SELECT 'q_BENCH{prefix}' || lpad(i::text, {21 - len(prefix)}, '0'), "
        f"'how-do-i-reset-my-password-{prefix.lower()}' || i, "
        "'How do I reset my password (' || i || ')?', "
        f"'{ANSWER}', 'published', c.id, i, now(), "
        "setweight(to_tsvector('simple', 'how do i reset my password'), 'A'), 0, now(), now() "
        f"FROM generate_series(1, {count}) AS i, "
        f'(SELECT id FROM "{schema}".categories WHERE is_default) AS c'
    )


async def _create_many(
    slugs: list[str], questions_each: int, out: Path, timings: bool
) -> list[dict[str, Any]]:
    from sqlalchemy import text

    from api.orgs import create_org
    from billing.plans import Plan
    from tenancy.db import make_engine, shared_session
    from tenancy.keys import create_key
    from tenancy.settings import get_settings

    engine = make_engine(get_settings(), pool_size=2)
    records: list[dict[str, Any]] = []
    try:
        with out.open("a") as fh:
            for slug in slugs:
                started = time.perf_counter()
                org = await create_org(engine, slug, None, Plan.ENTERPRISE)
                elapsed = time.perf_counter() - started
                async with shared_session(engine) as session:
                    key = await create_key(session, org.id, ["admin"])
                    if questions_each:
                        await session.execute(
                            text(question_rows_sql(org.schema_name, questions_each))
                        )
                    await session.commit()
                record = {
                    "slug": slug,
                    "id": org.id,
                    "schema": org.schema_name,
                    "key": key.key,
                    "create_ms": elapsed * 1000,
                }
                fh.write(json.dumps(record) + "\n")
                records.append(record)
    finally:
        await engine.dispose()
    return records


def main(argv: list[str]) -> None:
    """``python -m bench.seed SLUG_FILE QUESTIONS_EACH OUT_FILE`` (one seeding process)."""
    slugs = Path(argv[0]).read_text().split()
    asyncio.run(_create_many(slugs, int(argv[1]), Path(argv[2]), False))


def create_orgs(
    slugs: list[str], *, out_dir: Path, processes: int, questions_each: int = 0
) -> list[dict[str, Any]]:
    """Create the orgs with ``processes`` processes; returns their records."""
    out_dir.mkdir(parents=True, exist_ok=True)
    procs = []
    files = []
    for n in range(processes):
        part = slugs[n::processes]
        if not part:
            continue
        stem = out_dir / f"orgs-{time.monotonic_ns()}-{n}"
        Path(f"{stem}.slugs").write_text("\n".join(part))
        path = Path(f"{stem}.jsonl")
        files.append(path)
        argv = [sys.executable, "-m", "bench.seed", f"{stem}.slugs", str(questions_each), str(path)]
        procs.append(subprocess.Popen(argv, cwd=Path(__file__).resolve().parent.parent))
    for proc in procs:
        if proc.wait() != 0:
            raise RuntimeError(f"org creation process failed ({proc.returncode})")
    records: list[dict[str, Any]] = []
    for path in files:
        records.extend(json.loads(line) for line in path.read_text().splitlines())
    return records


async def create_timed(slugs: list[str]) -> list[float]:
    """Create orgs one after another in this process; the milliseconds each took."""
    records = await _create_many(slugs, 0, Path(os.devnull), True)
    return [r["create_ms"] for r in records]


if __name__ == "__main__":
    main(sys.argv[1:])
