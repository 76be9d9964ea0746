"""Running one row of ``make bench`` alone (``python -m bench.<row> --seconds N``): a world of
its own (embedded PostgreSQL and Redis, migrated), the row's figures printed as ``make bench``
prints them, then the raw measurement as one JSON line."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from bench import load

if TYPE_CHECKING:
    from bench.services import World

T = TypeVar("T")


def in_world(work: Callable[[World], T]) -> T:
    """``work(world)`` in a fresh, migrated world, stopped whatever happens."""
    from bench.services import World

    load.ensure_wrk()
    world = World()
    try:
        world.start()
        world.run("migrate")
        return work(world)
    finally:
        world.stop()


def report(entries: list[dict[str, Any]], found: Any, width: int = 44) -> int:
    for entry in entries:
        print(
            f"{entry['name']:<{width}} {entry['figure']:>8.1f} ms"
            f"  ref {entry['reference']:>7.1f} ms"
            f"  {entry['target']}  {'MET' if entry['met'] else 'MISSED'}"
        )
    print(json.dumps(found))
    return 0
