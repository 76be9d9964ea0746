"""Benchmark of webhook deliveries: throughput to a fast local TLS receiver, and latency from
commit to receipt at a steady event rate, with one worker process (``faq worker``, 8 threads).

    .venv/bin/python -m bench.deliveries [--burst 2000] [--rate 100] [--seconds 20]

Starts its own embedded PostgreSQL (fsync off: this measures CPU and round trips, not the
disk) and Redis in a temp folder, a TLS receiver (trustme CA, aiohttp) in a thread of this
process that answers 200 at once, and ``faq worker`` as a subprocess trusting that CA.
Events are written to the outbox with ``record_event`` in their own transaction, committed with
``tenancy.transactions.commit`` (so the relay message goes out after commit, as in the API);
the whole pipeline runs: relay, fan-out, ``deliveries.send``, signing, TLS POST, recording.

1. Throughput: ``--burst`` events committed as fast as one connection can, to one webhook
   (per-webhook in-flight limit 4) and then to four webhooks in four orgs; deliveries per
   second from the first commit to the last receipt.
2. Latency: ``--rate`` events per second for ``--seconds``, one webhook; p50/p95/p99/max of
   commit-to-receipt (commit returned -> receiver got the request).
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
    from api.webhooks.schemas import WebhookCreate
    from api.webhooks.service import create_webhook
    from billing.plans import Plan
    from tenancy.db import tenant_session
    from tenancy.middleware import OrgContext
    from tenancy.orgs import create_org

    slug = f"bench-{time.monotonic_ns()}"
    info = await create_org(engine, slug, None, Plan.ENTERPRISE)
    org = OrgContext(info.id, info.slug, info.plan, info.schema_name, "bench", ("admin",))
    async with tenant_session(engine, info.schema_name) as session:
        body = WebhookCreate.model_validate(
            {"url": url, "events": ["category.created"]}, strict=False
        )
        await create_webhook(session, org, body)
        await session.commit()
    return info.id, info.schema_name


async def emit(engine: Any, org_id: str, schema: str, seq: int, commits: dict[int, float]) -> None:
    from tasks.outbox import record_event
    from tenancy.db import tenant_session
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


async def burst(engine: Any, receiver: Receiver, orgs: list[tuple[str, str]], n: int) -> float:
    commits: dict[int, float] = {}
    base = len(receiver.first_seen)
    started = time.time()
    sem = asyncio.Semaphore(8)

    async def one(seq: int) -> None:
        org_id, schema = orgs[seq % len(orgs)]
        async with sem:
            await emit(engine, org_id, schema, 10_000_000 + base + seq, commits)

    await asyncio.gather(*(one(i) for i in range(n)))
    await wait_received(receiver, base + n, timeout=600)
    last = max(t for t, _ in receiver.first_seen.values())
    return n / (last - started)


async def steady(
    engine: Any, receiver: Receiver, org: tuple[str, str], rate: float, seconds: float
) -> list[float]:
    commits: dict[int, float] = {}
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
        [sys.executable, "-m", "api.cli", "worker", "--processes", "1", "--threads", "8"],
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

        rate_one = await burst(engine, receiver, [one], args.burst)
        rate_four = await burst(engine, receiver, four, args.burst)
        print(f"throughput, 1 webhook  : {rate_one:7.0f} deliveries/s ({args.burst} events)")
        print(f"throughput, 4 webhooks : {rate_four:7.0f} deliveries/s ({args.burst} events)")

        receiver.first_seen.clear()
        latencies = await steady(engine, receiver, one, args.rate, args.seconds)
        print(
            f"commit->receipt at {args.rate:g} events/s for {args.seconds:g}s "
            f"({len(latencies)} events): p50 {statistics.median(latencies):.0f} ms, "
            f"p95 {percentile(latencies, 95):.0f} ms, p99 {percentile(latencies, 99):.0f} ms, "
            f"max {max(latencies):.0f} ms"
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
