"""Connection set-up at many orgs: a new connection of the service's engine and its first
query reading an array column (``shared.api_keys.scopes``, ``varchar[]``), beside the same on
a bare asyncpg connection, which introspects the array type with a catalog query first (what
every new connection of the service did before issue 18; on a Citus coordinator that query
paid the shard-hiding filter on every ``pg_class`` scan: 52 s at ~150 orgs).

    .venv/bin/python -m bench.connect_setup [--orgs 200] [--samples 20]

Standalone it starts its own embedded PostgreSQL and Redis, runs ``faq migrate`` and creates
``--orgs`` orgs through the real provisioning code (``bench.seed``). From ``make bench``:
``for entry in connect_setup_rows(self): self.row(**entry)`` measures the bench's world (all
its orgs). Prints one row: the median set-up time in ms (target < 50 ms, and no type
introspection query sent), the bare asyncpg median as the reference.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

SAMPLES = 20
TARGET_MS = 50.0
FIRST_QUERY = "SELECT scopes FROM shared.api_keys LIMIT 1"


async def measure(samples: int = SAMPLES) -> dict[str, Any]:
    """Median ms of connect + first array read, the service's engine and bare asyncpg."""
    import asyncpg
    from sqlalchemy import event, text

    from tenancy.db import make_engine
    from tenancy.settings import get_settings

    settings = get_settings()
    engine = make_engine(settings, pool_size=1)
    introspections: list[str] = []

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.driver_connection.add_query_logger(
            lambda record: (
                introspections.append(record.query)
                if "typeinfo" in record.query or "pg_type" in record.query
                else None
            )
        )

    event.listen(engine.sync_engine, "connect", on_connect)
    ours: list[float] = []
    bare: list[float] = []
    url = settings.require_database_url().replace("postgresql+asyncpg://", "postgresql://")
    try:
        async with engine.connect() as conn:
            orgs = (await conn.execute(text("SELECT count(*) FROM shared.organizations"))).scalar()
        for _ in range(samples):
            await engine.dispose()
            started = time.perf_counter()
            async with engine.connect() as conn:
                await conn.execute(text(FIRST_QUERY))
            ours.append((time.perf_counter() - started) * 1000)

            started = time.perf_counter()
            raw = await asyncpg.connect(url)
            try:
                await raw.fetch(FIRST_QUERY)
            finally:
                await raw.close()
            bare.append((time.perf_counter() - started) * 1000)
    finally:
        await engine.dispose()
    return {
        "orgs": orgs,
        "samples": samples,
        "ours_ms": statistics.median(ours),
        "ours_max_ms": max(ours),
        "bare_asyncpg_ms": statistics.median(bare),
        "introspection_queries": len(introspections),
    }


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    figure = found["ours_ms"]
    return [
        {
            "name": f"connection set-up ({found['orgs']} orgs)",
            "measured_as": (
                f"connect + first varchar[] read, median of {found['samples']}; "
                f"ref: bare asyncpg (introspects); {found['introspection_queries']} "
                "introspection queries"
            ),
            "figure": figure,
            "reference": found["bare_asyncpg_ms"],
            "unit": "ms",
            "target": f"< {TARGET_MS:.0f} ms, no introspection",
            "met": figure < TARGET_MS and found["introspection_queries"] == 0,
            "ratio": figure / TARGET_MS,
        }
    ]


def connect_setup_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: the bench's world (``DATABASE_URL`` is in the environment)."""
    return rows(asyncio.run(measure()))


def main(argv: list[str]) -> int:
    from bench import seed
    from bench.services import World
    from bench.standalone import in_world, report

    parser = argparse.ArgumentParser(prog="python -m bench.connect_setup")
    parser.add_argument("--orgs", type=int, default=200)
    parser.add_argument("--samples", type=int, default=SAMPLES)
    args = parser.parse_args(argv)

    def work(world: World) -> dict[str, Any]:
        slugs = [f"bench-connect-{n:05d}" for n in range(args.orgs)]
        seed.create_orgs(slugs, out_dir=world.tmp / "orgs", processes=2)
        return asyncio.run(measure(args.samples))

    found = in_world(work)
    return report(rows(found), found, width=36)


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
