"""Benchmark of webhook deliveries: throughput to a fast local TLS receiver, and latency from
commit to receipt at a steady event rate, with one worker process (``faq worker``, 8 threads).

    .venv/bin/python -m bench.deliveries [--burst 2000] [--rate 100] [--seconds 20]

Starts its own embedded PostgreSQL (fsync off: this measures CPU and round trips, not the
disk) and Redis in a temp folder, a TLS receiver (trustme CA, aiohttp) in a thread of this
process that answers 200 at once, and ``faq worker`` as a subprocess trusting that CA.
Events are written to the outbox with ``record_event`` in their own transaction, committed with
``tenancy.transactions.commit`` (so the relay message goes out after commit, as in the API);
the whole pipeline runs: relay, fan-out, ``deliveries.send``, signing, TLS POST, recording.

1. Throughput: ``--burst`` events committed by 8 connections, to one webhook (per-webhook
   in-flight limit 4) and then to four webhooks in four orgs; deliveries per second from the
   first commit to the last receipt. With one delivery per event this is at most the rate the
   events are committed at (printed beside it, about 450-500/s here), so a third burst sends
   ``--burst / --fanout`` events to one org with ``--fanout`` webhooks (each event fans out
   to all): the worker's own throughput.
2. Latency: ``--rate`` events per second for ``--seconds``, one webhook; p50/p95/p99/max of
   commit-to-receipt (commit returned -> receiver got the request).
3. Isolation: ``--iso-rate`` events/s round-robin over 20 orgs with one healthy webhook each
   for ``--iso-seconds``; then the same with a 21st org whose webhook points at a TCP port
   that accepts and never answers (every attempt times out). Healthy p99 with vs without.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class Receiver:
    """A TLS receiver on 127.0.0.1 in its own thread and event loop: answers 200, records the
    time each delivery id first arrived."""

    def __init__(self, folder: Path) -> None:
        import trustme

        self.ca = trustme.CA()
        self.cert = self.ca.issue_cert("127.0.0.1", "localhost")
        self.ca_path = folder / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_path))
        self.first_seen: dict[str, tuple[float, int]] = {}
        self.requests = 0
        self.ids: set[str] = set()
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> Receiver:
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait(10)
        return self

    def _run(self) -> None:
        import orjson
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            now = time.time()
            self.requests += 1
            delivery_id = request.headers["X-Service-Delivery-Id"]
            self.ids.add(delivery_id)
            if delivery_id not in self.first_seen:
                self.first_seen[delivery_id] = (now, orjson.loads(body)["data"]["seq"])
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

    def url(self, name: str) -> str:
        return f"https://127.0.0.1:{self.port}/{name}"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def make_org_with_webhook(engine: Any, url: str) -> tuple[str, str]:
    from api.orgs import create_org
    from api.webhooks.schemas import WebhookCreate
    from api.webhooks.service import create_webhook
    from billing.plans import Plan
    from tenancy.db import tenant_session
    from tenancy.principal import Principal

    slug = f"bench-{time.monotonic_ns()}"
    info = await create_org(engine, slug, None, Plan.ENTERPRISE)
    org = Principal(info.id, info.slug, info.plan, info.schema_name, "bench", ("admin",))
    async with tenant_session(engine, info.schema_name) as session:
        body = WebhookCreate.model_validate(
            {"url": url, "events": ["category.created"]}, strict=False
        )
        await create_webhook(session, org, body)
        await session.commit()
    return info.id, info.schema_name


async def make_org_with_webhooks(engine: Any, urls: list[str]) -> tuple[str, str]:
    """One org with one webhook (on ``category.created``) per URL: each event fans out to all."""
    from api.webhooks.schemas import WebhookCreate
    from api.webhooks.service import create_webhook
    from tenancy.db import tenant_session
    from tenancy.principal import Principal

    org_id, schema = await make_org_with_webhook(engine, urls[0])
    from billing.plans import Plan

    org = Principal(org_id, "bench", Plan.ENTERPRISE, schema, "bench", ("admin",))
    async with tenant_session(engine, schema) as session:
        for url in urls[1:]:
            body = WebhookCreate.model_validate(
                {"url": url, "events": ["category.created"]}, strict=False
            )
            await create_webhook(session, org, body)
        await session.commit()
    return org_id, schema


class BlackHole:
    """TCP on 127.0.0.1 that accepts connections and never answers (not even the TLS
    handshake): every delivery to it ends at FAQ_WEBHOOK_TIMEOUT_SECONDS."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.held: list[Any] = []
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


async def emit(engine: Any, org_id: str, schema: str, seq: int, commits: dict[int, float]) -> None:
    from tenancy.db import tenant_session
    from tenancy.outbox import record_event
    from tenancy.transactions import commit

    async with tenant_session(engine, schema) as session:
        await record_event(session, org_id, "category.created", {"seq": seq})
        await session.commit()
        commits[seq] = time.time()
        # The after-commit relay send, as the API does it (commit() runs it off the loop).
        await commit(session)


async def wait_received(receiver: Receiver, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(receiver.first_seen) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(receiver.first_seen)}/{count} delivered in {timeout}s")
        await asyncio.sleep(0.01)


async def burst(
    engine: Any,
    receiver: Receiver,
    orgs: list[tuple[str, str]],
    n: int,
    stats: dict[str, float] | None = None,
    per_event: int = 1,
) -> float:
    """Deliveries per second from the first commit to the last receipt; ``stats`` (optional)
    gets ``commit_rate``: events committed per second by the 8 emitting connections.
    ``per_event``: deliveries each event fans out to (orgs with that many webhooks)."""
    commits: dict[int, float] = {}
    base = len(receiver.first_seen)
    started = time.time()
    sem = asyncio.Semaphore(8)

    async def one(seq: int) -> None:
        org_id, schema = orgs[seq % len(orgs)]
        async with sem:
            await emit(engine, org_id, schema, 10_000_000 + base + seq, commits)

    await asyncio.gather(*(one(i) for i in range(n)))
    if stats is not None:
        stats["commit_rate"] = n / (time.time() - started)
    await wait_received(receiver, base + n * per_event, timeout=600)
    last = max(t for t, _ in receiver.first_seen.values())
    return n * per_event / (last - started)


async def steady(
    engine: Any,
    receiver: Receiver,
    org: tuple[str, str],
    rate: float,
    seconds: float,
    commits: dict[int, float] | None = None,
) -> list[float]:
    """Commit-to-receipt latencies (ms) of events committed at ``rate``; ``commits`` (when
    given) gets each event's commit time, by its sequence number."""
    commits = {} if commits is None else commits
    base = len(receiver.first_seen)
    total = int(rate * seconds)
    tasks = []
    started = time.monotonic()
    for i in range(total):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(emit(engine, org[0], org[1], i, commits)))
    await asyncio.gather(*tasks)
    await wait_received(receiver, base + total, timeout=300)
    by_seq = {seq: at for at, seq in receiver.first_seen.values() if seq < total}
    return [(by_seq[s] - commits[s]) * 1000 for s in range(total)]


async def spread(
    engine: Any,
    receiver: Receiver,
    healthy: list[tuple[str, str]],
    slow: tuple[str, str] | None,
    rate: float,
    seconds: float,
    first_seq: int,
) -> list[float]:
    """``rate`` events/s round-robin over the healthy orgs (and the slow one when given: it
    gets one event in len(healthy) + 1); returns the healthy commit-to-receipt latencies."""
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
        tasks.append(asyncio.create_task(emit(engine, org[0], org[1], seq, commits)))
    await asyncio.gather(*tasks)
    deadline = time.monotonic() + 120
    while True:
        seen = {seq: at for at, seq in receiver.first_seen.values()}
        if all(s in seen for s in healthy_seqs):
            break
        if time.monotonic() > deadline:
            missing = sum(1 for s in healthy_seqs if s not in seen)
            raise SystemExit(f"{missing} healthy deliveries never arrived")
        await asyncio.sleep(0.05)
    return [(seen[s] - commits[s]) * 1000 for s in healthy_seqs]


async def run(args: argparse.Namespace, env: dict[str, str], tmp: Path) -> None:
    from tenancy.db import make_engine
    from tenancy.schemas import migrate_tenants, upgrade_shared_schema
    from tenancy.settings import get_settings

    receiver = Receiver(tmp).start()
    os.environ["FAQ_WEBHOOK_CA_BUNDLE"] = str(receiver.ca_path)
    get_settings.cache_clear()
    engine = make_engine(get_settings(), pool_size=10)
    await upgrade_shared_schema(engine)
    await migrate_tenants(engine)

    worker_env = {
        **os.environ,
        "FAQ_LOG_LEVEL": os.environ.get("BENCH_WORKER_LOG_LEVEL", "WARNING"),
    }
    log = (tmp / "worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tasks.cli", "worker", "--processes", "1", "--threads", "8"],
        env=worker_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        one = await make_org_with_webhook(engine, receiver.url("one"))
        four = [one] + [
            await make_org_with_webhook(engine, receiver.url(f"org{i}")) for i in range(3)
        ]
        # Warm up: the worker's imports, connections, TLS sessions.
        await burst(engine, receiver, four, 50)

        one_stats: dict[str, float] = {}
        four_stats: dict[str, float] = {}
        rate_one = await burst(engine, receiver, [one], args.burst, one_stats)
        rate_four = await burst(engine, receiver, four, args.burst, four_stats)
        print(
            f"throughput, 1 webhook  : {rate_one:7.0f} deliveries/s ({args.burst} events, "
            f"committed at {one_stats['commit_rate']:.0f}/s)"
        )
        print(
            f"throughput, 4 webhooks : {rate_four:7.0f} deliveries/s ({args.burst} events, "
            f"committed at {four_stats['commit_rate']:.0f}/s)"
        )

        fan = await make_org_with_webhooks(
            engine, [receiver.url(f"fan{i}") for i in range(args.fanout)]
        )
        fan_stats: dict[str, float] = {}
        fan_events = max(args.burst // args.fanout, 1)
        rate_fan = await burst(engine, receiver, [fan], fan_events, fan_stats, args.fanout)
        print(
            f"throughput, fan-out    : {rate_fan:7.0f} deliveries/s ({fan_events} events x "
            f"{args.fanout} webhooks of one org, committed at {fan_stats['commit_rate']:.0f}/s)"
        )

        receiver.first_seen.clear()
        latencies = await steady(engine, receiver, one, args.rate, args.seconds)
        print(
            f"commit->receipt at {args.rate:g} events/s for {args.seconds:g}s "
            f"({len(latencies)} events): p50 {statistics.median(latencies):.0f} ms, "
            f"p95 {percentile(latencies, 95):.0f} ms, p99 {percentile(latencies, 99):.0f} ms, "
            f"max {max(latencies):.0f} ms"
        )
        if args.iso_seconds > 0:
            hole = BlackHole()
            healthy = [
                await make_org_with_webhook(engine, receiver.url(f"h{i}")) for i in range(20)
            ]
            slow = await make_org_with_webhook(engine, hole.url())
            # Warm: each healthy org's schema lookup, statements and TLS connection.
            await burst(engine, receiver, healthy, 40)
            receiver.first_seen.clear()
            without = await spread(
                engine, receiver, healthy, None, args.iso_rate, args.iso_seconds, 20_000_000
            )
            receiver.first_seen.clear()
            with_slow = await spread(
                engine, receiver, healthy, slow, args.iso_rate, args.iso_seconds, 30_000_000
            )
            p99_without, p99_with = percentile(without, 99), percentile(with_slow, 99)
            print(
                f"isolation at {args.iso_rate:g} events/s for {args.iso_seconds:g}s, 20 healthy "
                f"webhooks: p99 {p99_without:.0f} ms; beside one that always times out: "
                f"p99 {p99_with:.0f} ms (ratio {p99_with / p99_without:.2f}, target <= 1.2; "
                f"p50 {statistics.median(without):.0f} / {statistics.median(with_slow):.0f} ms; "
                f"{len(hole.held)} connections to the slow receiver)"
            )
        print(
            f"requests received: {receiver.requests}, distinct delivery ids: "
            f"{len(receiver.ids)} (duplicates: {receiver.requests - len(receiver.ids)})"
        )
    finally:
        if os.environ.get("BENCH_KEEP_LOG"):
            shutil.copy(tmp / "worker.log", os.environ["BENCH_KEEP_LOG"])
        os.killpg(worker.pid, 9)
        worker.wait()
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--burst", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--fanout", type=int, default=4, help="webhooks per event (fan-out)")
    parser.add_argument("--iso-rate", type=float, default=40, help="isolation: events/s")
    parser.add_argument(
        "--iso-seconds", type=float, default=20, help="isolation: seconds per run (0: skip)"
    )
    args = parser.parse_args()

    from cryptography.fernet import Fernet

    from tenancy.embedded import EmbeddedPostgres, EmbeddedRedis

    tmp = Path(tempfile.mkdtemp(prefix="faq-bench-deliveries-"))
    tmp.chmod(0o755)
    pg = EmbeddedPostgres(tmp / "pg", fsync=False, max_connections=200).start()
    redis = EmbeddedRedis(tmp / "redis").start()
    env = {
        "DATABASE_URL": pg.url,
        "REDIS_URL": redis.url,
        "FAQ_SECRET_KEY": Fernet.generate_key().decode(),
        "FAQ_ENV": "production",
        "FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "FAQ_LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    try:
        asyncio.run(run(args, env, tmp))
    finally:
        redis.stop()
        pg.stop(mode="immediate")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
