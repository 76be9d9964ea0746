"""The periodic outbox relay's cost at many orgs: one ``relay_all`` sweep with nothing pending
(one indexed query on ``shared.outbox_pending``), and one with one event pending in each of 100
orgs (written through ``record_events``, the path every mutation takes, into each org's own
outbox). The sweep's cost must follow the pending events, not the orgs. A third row is what
each write pays for marking its org pending (``tenancy.outbox.mark_pending``: one autocommit
round trip on the marker pool, outside the tenant transaction).

    .venv/bin/python -m bench.relay_cost [--orgs 200] [--pending 100]

Standalone it starts its own embedded PostgreSQL and Redis, runs ``faq migrate`` and creates
``--orgs`` orgs through the real provisioning code (``bench.seed``). From ``make bench``:
``for entry in relay_cost_rows(self): self.row(**entry)`` measures the bench's world (all its
orgs; run it before a row that needs the outbox left alone, it relays whatever is pending).
Prints three rows: the marker's cost per write (median of 200, target < 5 ms), the idle
sweep (median of 5, target < 100 ms) and the busy sweep (target < 2 s, and every pending event
relayed).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

PENDING_ORGS = 100
IDLE_TARGET_MS = 100.0
BUSY_TARGET_MS = 2000.0
MARK_TARGET_MS = 5.0
MARK_SAMPLES = 200


async def measure(pending_orgs: int = PENDING_ORGS, samples: int = 5) -> dict[str, Any]:
    from sqlalchemy import text

    from tasks.relay import relay_all
    from tenancy.db import make_engine, tenant_session
    from tenancy.outbox import mark_pending, record_events
    from tenancy.settings import get_settings
    from tenancy.transactions import commit

    engine = make_engine(get_settings(), pool_size=2)
    try:
        async with engine.connect() as conn:
            orgs = (
                await conn.execute(
                    text("SELECT id, schema_name FROM shared.organizations ORDER BY id")
                )
            ).all()
        await relay_all(engine)  # whatever was pending before, and a warm pool
        idle: list[float] = []
        for _ in range(samples):
            started = time.perf_counter()
            await relay_all(engine)
            idle.append((time.perf_counter() - started) * 1000)
        chosen = orgs[:: max(1, len(orgs) // pending_orgs)][:pending_orgs]
        marks: list[float] = []
        for n in range(MARK_SAMPLES):
            started = time.perf_counter()
            await mark_pending(engine, chosen[n % len(chosen)][0])
            marks.append((time.perf_counter() - started) * 1000)
        await relay_all(engine)  # clears those markers (nothing in the outboxes)
        for org_id, schema in chosen:
            async with tenant_session(engine, schema) as session:
                await record_events(session, org_id, [("ping", {"bench": "relay_cost"})])
                await commit(session)
        started = time.perf_counter()
        busy = await relay_all(engine)
        busy_ms = (time.perf_counter() - started) * 1000
    finally:
        await engine.dispose()
    return {
        "orgs": len(orgs),
        "pending_orgs": len(chosen),
        "idle_ms": statistics.median(idle),
        "mark_ms": statistics.median(marks),
        "busy_ms": busy_ms,
        "busy": busy,
    }


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    idle, busy = found["idle_ms"], found["busy_ms"]
    pending = found["pending_orgs"]
    mark = found["mark_ms"]
    return [
        {
            "name": "outbox marker, per write",
            "measured_as": f"tenancy.outbox.mark_pending, median of {MARK_SAMPLES}",
            "figure": mark,
            "reference": MARK_TARGET_MS,
            "unit": "ms",
            "target": f"< {MARK_TARGET_MS:.0f} ms",
            "met": mark < MARK_TARGET_MS,
            "ratio": mark / MARK_TARGET_MS,
        },
        {
            "name": f"outbox relay, nothing pending ({found['orgs']} orgs)",
            "measured_as": "tasks.relay.relay_all, median of 5",
            "figure": idle,
            "reference": IDLE_TARGET_MS,
            "unit": "ms",
            "target": f"< {IDLE_TARGET_MS:.0f} ms",
            "met": idle < IDLE_TARGET_MS,
            "ratio": idle / IDLE_TARGET_MS,
        },
        {
            "name": f"outbox relay, {pending} orgs pending ({found['orgs']} orgs)",
            "measured_as": f"one relay_all: {found['busy']}",
            "figure": busy,
            "reference": BUSY_TARGET_MS,
            "unit": "ms",
            "target": f"< {BUSY_TARGET_MS / 1000:.0f} s, all relayed",
            "met": busy < BUSY_TARGET_MS and found["busy"].get("events") == pending,
            "ratio": busy / BUSY_TARGET_MS,
        },
    ]


def relay_cost_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: the bench's world (``DATABASE_URL`` is in the environment)."""
    return rows(asyncio.run(measure()))


def main(argv: list[str]) -> int:
    from bench import seed
    from bench.services import World
    from bench.standalone import in_world, report

    parser = argparse.ArgumentParser(prog="python -m bench.relay_cost")
    parser.add_argument("--orgs", type=int, default=200)
    parser.add_argument("--pending", type=int, default=PENDING_ORGS)
    args = parser.parse_args(argv)

    def work(world: World) -> dict[str, Any]:
        slugs = [f"bench-relay-{n:05d}" for n in range(args.orgs)]
        seed.create_orgs(slugs, out_dir=world.tmp / "orgs", processes=2)
        return asyncio.run(measure(args.pending))

    found = in_world(work)
    return report(rows(found), found, width=44)


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
