"""Actors by name, declared on the broker when a worker starts (not on import).

An actor module marks its functions with ``@actor("questions.publish_due", ...)``: that
records the function and its options and returns it unchanged, so importing an actor module
touches no broker, and tests and ``faq jobs run`` call the plain function. Senders enqueue by
name (``tenancy.queue.enqueue``); ``tasks/broker.py`` declares every recorded actor on the
process's broker when a worker or the scheduler starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import dramatiq

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ActorSpec:
    name: str
    fn: Callable[..., Any]
    queue: str
    priority: int = 0
    options: dict[str, Any] = field(default_factory=dict)


ACTORS: dict[str, ActorSpec] = {}


def actor(
    name: str, *, queue: str = "default", priority: int = 0, **options: Any
) -> Callable[[F], F]:
    """``priority``: Dramatiq's, lower first; of the messages a worker has pulled from its
    queues, a thread takes the lowest-numbered one (background bulk work: a higher number)."""

    def record(fn: F) -> F:
        if name in ACTORS and ACTORS[name].fn is not fn:
            raise RuntimeError(f"actor {name!r} is declared twice")
        ACTORS[name] = ActorSpec(name, fn, queue, priority, options)
        return fn

    return record


def declare_actors(broker: dramatiq.Broker) -> None:
    """Declare every recorded actor on ``broker`` (once per process)."""
    for spec in ACTORS.values():
        if spec.name not in broker.actors:
            dramatiq.Actor(
                spec.fn,
                broker=broker,
                actor_name=spec.name,
                queue_name=spec.queue,
                priority=spec.priority,
                options=spec.options,
            )
