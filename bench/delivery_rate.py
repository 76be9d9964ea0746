"""Issue 14's delivery rows, reusing ``bench/deliveries.py`` (``make_org_with_webhook(s)``,
``emit``, ``burst``, ``steady``) against the bench's PostgreSQL and Redis, with one
``faq worker`` process (1 process, 8 threads) and a TLS keep-alive receiver on 127.0.0.1:

- deliveries/s: a burst of events to one org with ``FANOUT`` webhooks (each event fans out to
  all of them, so the worker, not the 8 committing connections, is the limit), deliveries per
  second from the first commit to the last receipt, and the worker's CPU (its process tree,
  from /proc) per delivery over the same span: >= 1,500/s and <= 0.5 ms each;
- p99 commit-to-receipt at 200 events/s to one webhook: < 250 ms, with where the time went
  (``steady_traced``: p50/p99 of commit -> relay -> attempt -> receipt, from the delivery
  rows' ``created_at`` and first attempt's ``at``).

``delivery_rate_rows(bench)`` returns the rows (``Bench.row(**entry)``). Alone (its own
embedded PostgreSQL and Redis, no seeding), with an optional py-spy profile of the worker
during the burst (``py-spy`` in the venv; top frames printed, raw stacks kept):

    .venv/bin/python -m bench.delivery_rate [--events 1500] [--seconds 10] [--profile DIR]
"""

from __future__ import annotations

import asyncio
import os
import ssl
import sys
import time
from pathlib import Path
from typing import Any

from bench import deliveries as d
from bench.cpu import Meter, py_spy

FANOUT = 10
RATE = 200.0
TARGET_RATE = 1500.0
TARGET_CPU_MS = 0.5
TARGET_P99_MS = 250.0


class CountingReceiver(d.Receiver):
    """``deliveries.Receiver`` (TLS, keep-alive, answers 200 at once) that also accepts payloads
    without ``data.seq`` (question events): counted in ``requests``/``ids``; only events that
    carry a ``seq`` (``deliveries.emit``) go into ``first_seen``."""

    def _run(self) -> None:
        import orjson
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            now = time.time()
            self.requests += 1
            delivery_id = request.headers.get("X-Service-Delivery-Id", "")
            self.ids.add(delivery_id)
            data = orjson.loads(body).get("data")
            seq = data.get("seq") if isinstance(data, dict) else None
            if isinstance(seq, int) and delivery_id not in self.first_seen:
                self.first_seen[delivery_id] = (now, seq)
            return web.Response(text="ok")

        async def main() -> None:
            app = web.Application()
            app.router.add_post("/{name}", handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.cert.configure_cert(context)
            site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context, backlog=1024)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self._ready.set()
            await asyncio.Event().wait()

        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(main())


def spawn_worker(world: Any, receiver: d.Receiver) -> Any:
    """One ``faq worker`` (1 process, 8 threads) trusting the receiver's CA."""
    return world.spawn(
        [sys.executable, "-m", "tasks.cli", "worker", "--processes", "1", "--threads", "8"],
        f"worker-{time.monotonic_ns()}.log",
        {"FAQ_WEBHOOK_CA_BUNDLE": str(receiver.ca_path), "FAQ_LOG_LEVEL": "WARNING"},
    )


def _profile(worker: Any, folder: Any, seconds: float) -> Any:
    """py-spy recording the worker's process tree for ``seconds`` (raw collapsed stacks)."""
    return py_spy(worker.pid, Path(folder) / "worker.stacks", seconds, subprocesses=True)


def top_frames(stacks: Path, count: int = 25) -> list[tuple[str, float, float]]:
    """``(frame, self %, total %)`` of py-spy's raw stacks, highest self time first."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    samples = 0
    for line in stacks.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        hits = int(n)
        samples += hits
        frames = [f for f in stack.split(";") if f]
        if not frames:
            continue
        own[frames[-1]] = own.get(frames[-1], 0) + hits
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + hits
    ranked = sorted(own, key=lambda f: -own[f])[:count]
    return [(f, own[f] * 100 / samples, inclusive[f] * 100 / samples) for f in ranked]


async def steady_traced(
    engine: Any, receiver: d.Receiver, org: tuple[str, str], rate: float, seconds: float
) -> tuple[list[float], dict[str, tuple[float, float]]]:
    """``deliveries.steady`` (commit-to-receipt latencies, ms), plus where the time went:
    p50/p99 (ms) of commit -> relay (the delivery row's ``created_at``), relay -> attempt
    (its first attempt's ``at``: the send signed it) and attempt -> receipt."""
    from sqlalchemy import text

    from tenancy.db import tenant_session

    commits: dict[int, float] = {}
    latencies = await d.steady(engine, receiver, org, rate, seconds, commits)
    total = len(latencies)
    seen = {i: (at, seq) for i, (at, seq) in receiver.first_seen.items() if seq < total}
    async with tenant_session(engine, org[1]) as session:
        rows = (
            await session.execute(
                text(
                    "SELECT id, extract(epoch FROM created_at), "
                    "extract(epoch FROM (attempts->0->>'at')::timestamptz) FROM deliveries"
                )
            )
        ).all()
    spans: dict[str, list[float]] = {
        "commit->relay": [],
        "relay->attempt": [],
        "attempt->receipt": [],
    }
    for delivery_id, created, signed in rows:
        if delivery_id not in seen or signed is None:
            continue
        at, seq = seen[delivery_id]
        spans["commit->relay"].append((float(created) - commits[seq]) * 1000)
        spans["relay->attempt"].append((float(signed) - float(created)) * 1000)
        spans["attempt->receipt"].append((at - float(signed)) * 1000)
    phases = {
        name: (d.percentile(values, 50), d.percentile(values, 99))
        for name, values in spans.items()
        if values
    }
    return latencies, phases


async def _run(bench: Any, profile: Path | None = None) -> dict[str, Any]:
    from bench.services import stop_process
    from tenancy.db import make_engine
    from tenancy.settings import get_settings

    quick = bench.quick
    receiver = CountingReceiver(bench.world.tmp).start()
    os.environ["FAQ_WEBHOOK_CA_BUNDLE"] = str(receiver.ca_path)
    get_settings.cache_clear()
    engine = make_engine(get_settings(), pool_size=10)
    worker = spawn_worker(bench.world, receiver)
    meter = Meter({"worker": [worker.pid]})
    out: dict[str, Any] = {}
    try:
        one = await d.make_org_with_webhook(engine, receiver.url("rate-one"))
        fan = await d.make_org_with_webhooks(
            engine, [receiver.url(f"rate-fan{i}") for i in range(FANOUT)]
        )
        await d.burst(engine, receiver, [fan], 20, per_event=FANOUT)  # warm: imports, TLS
        events = getattr(bench, "events", None) or (300 if quick else 1500)
        stats: dict[str, float] = {}
        spy = _profile(worker, profile, 600) if profile else None
        before = meter.sample()
        out["rate"] = await d.burst(engine, receiver, [fan], events, stats, per_event=FANOUT)
        after = meter.sample()
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes what it has
            spy.wait(30)
        out["deliveries"] = events * FANOUT
        out["commit_rate"] = stats["commit_rate"]
        out["cpu_ms"] = (after["worker"] - before["worker"]) * 1000 / out["deliveries"]

        receiver.first_seen.clear()
        seconds = getattr(bench, "seconds", None) or (5.0 if quick else 20.0)
        before = meter.sample()
        latencies, phases = await steady_traced(engine, receiver, one, RATE, seconds)
        after = meter.sample()
        out["phases"] = phases
        out["latency_events"] = len(latencies)
        out["latency_p50"] = d.percentile(latencies, 50)
        out["latency_p99"] = d.percentile(latencies, 99)
        out["latency_cpu_ms"] = (after["worker"] - before["worker"]) * 1000 / len(latencies)
    except SystemExit as exc:  # deliveries.wait_received gives up with SystemExit
        raise RuntimeError(str(exc)) from None
    finally:
        stop_process(worker)
        await engine.dispose()
    return out


def delivery_rate_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``("rate", self.rows_of("delivery_rate",
    "delivery_rate_rows"))``."""
    out = asyncio.run(_run(bench))
    rate, cpu_ms = out["rate"], out["cpu_ms"]
    return [
        {
            "name": "deliveries/s, 1 worker (issue 14)",
            "measured_as": f"{out['deliveries']} deliveries ({FANOUT} webhooks per event), "
            f"TLS keep-alive receiver; worker CPU {cpu_ms:.2f} ms/delivery",
            "figure": rate,
            "reference": TARGET_RATE,
            "unit": "dlv/s",
            "target": f">= {TARGET_RATE:,.0f}/s, <= {TARGET_CPU_MS} ms CPU",
            "met": rate >= TARGET_RATE and cpu_ms <= TARGET_CPU_MS,
            "ratio": rate / TARGET_RATE,
            "worker_cpu_ms_per_delivery": round(cpu_ms, 3),
            "commit_rate_per_s": round(out["commit_rate"], 1),
        },
        {
            "name": f"delivery p99 at {RATE:.0f} events/s",
            "measured_as": f"commit to receipt, {out['latency_events']} events, 1 webhook; "
            f"worker CPU {out['latency_cpu_ms']:.2f} ms/delivery",
            "figure": out["latency_p99"],
            "reference": TARGET_P99_MS,
            "unit": "ms",
            "target": f"< {TARGET_P99_MS:.0f} ms",
            "met": out["latency_p99"] < TARGET_P99_MS,
            "ratio": out["latency_p99"] / TARGET_P99_MS,
            "p50_ms": round(out["latency_p50"], 1),
            # p50/p99 of commit -> relay -> attempt -> receipt (``steady_traced``)
            "phases_ms": {k: [round(v, 1) for v in pair] for k, pair in out["phases"].items()},
            "worker_cpu_ms_per_delivery": round(out["latency_cpu_ms"], 3),
        },
    ]


def main() -> None:
    import argparse
    from types import SimpleNamespace

    from bench.services import World

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1500, help="burst events (x FANOUT)")
    parser.add_argument("--seconds", type=float, default=10.0, help="latency phase length")
    parser.add_argument("--profile", type=Path, help="folder for py-spy's worker stacks")
    args = parser.parse_args()
    world = World().start()
    try:
        world.run("migrate")
        bench = SimpleNamespace(quick=False, world=world, events=args.events, seconds=args.seconds)
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
        out = asyncio.run(_run(bench, args.profile))
        print(
            f"deliveries/s: {out['rate']:.0f} ({out['deliveries']} deliveries, events committed "
            f"at {out['commit_rate']:.0f}/s), worker CPU {out['cpu_ms']:.3f} ms/delivery"
        )
        print(
            f"p99 at {RATE:.0f} events/s: {out['latency_p99']:.0f} ms (p50 "
            f"{out['latency_p50']:.0f} ms, {out['latency_events']} events), worker CPU "
            f"{out['latency_cpu_ms']:.3f} ms/delivery"
        )
        for name, (p50, p99) in out.get("phases", {}).items():
            print(f"  {name}: p50 {p50:.0f} ms, p99 {p99:.0f} ms")
        if args.profile and (args.profile / "worker.stacks").exists():
            print("worker profile during the burst (self %, total %):")
            for frame, own, total in top_frames(args.profile / "worker.stacks"):
                print(f"  {own:5.1f} {total:5.1f}  {frame}")
    finally:
        world.stop()


if __name__ == "__main__":
    main()
