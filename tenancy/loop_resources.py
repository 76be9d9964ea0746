"""The one holder of per-event-loop resources (engines, Redis clients, HTTP sessions).

asyncpg connections, Redis connections and aiohttp sessions belong to the event loop that
made them. A process may run several loops over its life (a Dramatiq worker's loop thread,
``asyncio.run`` in the CLI, the test session), so each resource is made lazily, once per
loop, by ``per_loop`` and closed by ``close_loop_resources`` on that loop (worker shutdown,
end of a CLI command), newest first.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")
Closer = Callable[[Any], Awaitable[None]]

_resources: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, tuple[Any, Closer]]] = (
    weakref.WeakKeyDictionary()
)


def per_loop(name: str, make: Callable[[], T], close: Callable[[T], Awaitable[None]]) -> T:
    """The running loop's resource ``name``, made by ``make`` on first use."""
    held = _resources.setdefault(asyncio.get_running_loop(), {})
    entry = held.get(name)
    if entry is None:
        entry = held[name] = (make(), cast(Closer, close))
    return cast(T, entry[0])


def peek(name: str) -> Any | None:
    """The running loop's resource ``name`` if it was made, else None (nothing is made)."""
    entry = _resources.get(asyncio.get_running_loop(), {}).get(name)
    return None if entry is None else entry[0]


async def close_loop_resources() -> None:
    """Close every resource of the running loop, newest first; one failure stops no other."""
    held = _resources.pop(asyncio.get_running_loop(), {})
    for name, (resource, close) in reversed(list(held.items())):
        try:
            await close(resource)
        except Exception:
            log.warning("loop_resource_close_failed", resource=name, exc_info=True)
