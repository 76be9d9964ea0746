"""Delivery rows, reusing the webhooks engineer's ``bench/deliveries.py`` (its TLS receiver,
``make_org_with_webhook``, ``emit``, ``burst`` and ``steady``) against this bench's
PostgreSQL and Redis, with one ``faq worker`` process (8 threads):

- throughput: a burst of events to four webhooks in four orgs, deliveries/s from the first
  commit to the last receipt (the per-webhook in-flight limit is 4, so one webhook alone is
  also reported);
- latency: 100 events/s to one webhook, p99 commit-to-receipt;
- isolation: 40 events/s (below one worker's capacity) spread over 20 healthy webhooks, then
  the same with one more
  webhook whose receiver accepts the connection and never answers (a timeout every time):
  the healthy receivers' p99 with it vs without it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from typing import Any

from bench import deliveries as d

ISO_RATE = 40.0


class BlackHole:
    """TCP on 127.0.0.1 that accepts and never answers: every delivery to it times out."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/slow"


async def _spread(
    engine: Any,
    receiver: d.Receiver,
    healthy: list[tuple[str, str]],
    slow: tuple[str, str] | None,
    rate: float,
    seconds: float,
    first_seq: int,
) -> list[float]:
    """``rate`` events/s round-robin over the healthy orgs (and as many again to the slow one
    when given: it gets one event in 21); returns healthy commit-to-receipt latencies (ms)."""
    commits: dict[int, float] = {}
    targets = healthy + ([slow] if slow else [])
    total = int(rate * seconds)
    tasks = []
    healthy_seqs = []
    started = time.monotonic()
    for i in range(total):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        org = targets[i % len(targets)]
        seq = first_seq + i
        if org is not slow:
            healthy_seqs.append(seq)
        tasks.append(asyncio.create_task(d.emit(engine, org[0], org[1], seq, commits)))
    await asyncio.gather(*tasks)
    deadline = time.monotonic() + 120
    while True:
        seen = {seq: at for at, seq in receiver.first_seen.values()}
        if all(s in seen for s in healthy_seqs) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    missing = [s for s in healthy_seqs if s not in seen]
    if missing:
        raise RuntimeError(f"{len(missing)} healthy deliveries never arrived")
    return [(seen[s] - commits[s]) * 1000 for s in healthy_seqs]


async def _run(bench: Any) -> dict[str, Any]:
    from tenancy.db import make_engine
    from tenancy.settings import get_settings

    quick = bench.quick
    receiver = d.Receiver(bench.world.tmp).start()
    hole = BlackHole()
    os.environ["FAQ_WEBHOOK_CA_BUNDLE"] = str(receiver.ca_path)
    get_settings.cache_clear()
    engine = make_engine(get_settings(), pool_size=10)
    worker = bench.world.spawn(
        [sys.executable, "-m", "tasks.cli", "worker", "--processes", "1", "--threads", "8"],
        "worker.log",
        {"FAQ_WEBHOOK_CA_BUNDLE": str(receiver.ca_path), "FAQ_LOG_LEVEL": "WARNING"},
    )
    out: dict[str, Any] = {}
    try:
        one = await d.make_org_with_webhook(engine, receiver.url("one"))
        four = [one] + [
            await d.make_org_with_webhook(engine, receiver.url(f"org{i}")) for i in range(3)
        ]
        await d.burst(engine, receiver, four, 50)  # warm: imports, connections, TLS
        n = 300 if quick else 2000
        out["burst_events"] = n
        out["rate_one"] = await d.burst(engine, receiver, [one], n)
        out["rate_four"] = await d.burst(engine, receiver, four, n)
        receiver.first_seen.clear()
        seconds = 4.0 if quick else 20.0
        latencies = await d.steady(engine, receiver, one, 100.0, seconds)
        out["latency_p50"] = d.percentile(latencies, 50)
        out["latency_p99"] = d.percentile(latencies, 99)
        out["latency_events"] = len(latencies)

        healthy = [await d.make_org_with_webhook(engine, receiver.url(f"h{i}")) for i in range(20)]
        slow = await d.make_org_with_webhook(engine, hole.url())
        iso_seconds = 5.0 if quick else 30.0
        receiver.first_seen.clear()
        without = await _spread(engine, receiver, healthy, None, ISO_RATE, iso_seconds, 1_000_000)
        receiver.first_seen.clear()
        with_slow = await _spread(engine, receiver, healthy, slow, ISO_RATE, iso_seconds, 2_000_000)
        out["iso_p99_without"] = d.percentile(without, 99)
        out["iso_p99_with"] = d.percentile(with_slow, 99)
        out["iso_seconds"] = iso_seconds
        out["slow_connections_held"] = len(hole.held)
    except SystemExit as exc:  # deliveries.wait_received gives up with SystemExit
        raise RuntimeError(str(exc)) from None
    finally:
        from bench.services import stop_process

        stop_process(worker)
        await engine.dispose()
    return out


def delivery_rows(bench: Any) -> list[dict[str, Any]]:
    out = asyncio.run(_run(bench))
    best = max(out["rate_four"], out["rate_one"])
    return [
        {
            "name": "deliveries/s (1 worker)",
            "measured_as": f"burst of {out['burst_events']}, 4 webhooks, TLS receiver",
            "figure": best,
            "reference": 500.0,
            "unit": "dlv/s",
            "target": ">= 500/s",
            "met": best >= 500,
            "ratio": best / 500,
            "one_webhook_per_s": round(out["rate_one"], 1),
            "four_webhooks_per_s": round(out["rate_four"], 1),
        },
        {
            "name": "delivery p99 at 100 events/s",
            "measured_as": f"commit to receipt, {out['latency_events']} events",
            "figure": out["latency_p99"],
            "reference": 500.0,
            "unit": "ms",
            "target": "< 500 ms",
            "met": out["latency_p99"] < 500,
            "ratio": out["latency_p99"] / 500,
            "p50_ms": round(out["latency_p50"], 1),
        },
        {
            "name": "slow receiver isolation p99",
            "measured_as": f"{ISO_RATE:.0f} events/s: 20 healthy + 1 timing-out vs 20 healthy",
            "figure": out["iso_p99_with"],
            "reference": out["iso_p99_without"],
            "unit": "ms",
            "target": "<= 1.2x",
            "met": out["iso_p99_with"] <= 1.2 * out["iso_p99_without"],
            "slow_connections_held": out["slow_connections_held"],
        },
    ]
