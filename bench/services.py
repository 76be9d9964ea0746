"""The bench's own world: embedded PostgreSQL and Redis in a temp folder, `faq serve`
processes, the bare reference app, and small helpers to watch them (RSS of PostgreSQL
backends, HTTP readiness).

PostgreSQL runs with fsync off (and synchronous_commit off): the bench measures the service's
CPU and round trips on a 2-core machine, not the disk; the write row says so.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from tenancy.embedded import EmbeddedPostgres, EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FSYNC = False


@dataclass
class World:
    """Embedded services and the environment every child process gets."""

    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="faq-bench-")))
    pg: EmbeddedPostgres | None = None
    redis: EmbeddedRedis | None = None
    env: dict[str, str] = field(default_factory=dict)
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> World:
        self.tmp.chmod(0o755)  # PostgreSQL runs as its own system user when we are root
        self.pg = EmbeddedPostgres(self.tmp / "pg", fsync=FSYNC, max_connections=300).start()
        self.redis = EmbeddedRedis(self.tmp / "redis").start()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FAQ_", "STRIPE_"))}
        env.update(
            DATABASE_URL=self.pg.url,
            REDIS_URL=self.redis.url,
            FAQ_SECRET_KEY=Fernet.generate_key().decode(),
            FAQ_ENV="production",
            # Loopback webhook receivers (the bench's own) must be reachable.
            FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS="true",
            # The bench measures throughput, not the per-key rate limiter's refusals: the
            # limiter still runs (one Redis round trip per request), with limits out of reach.
            FAQ_RATE_LIMITS="FREE=100000000,STARTER=100000000,PRO=100000000,ENTERPRISE=100000000",
            # Likewise the help center's per-address and per-org limits (the hc-flood row of
            # bench/noisy.py sets its own).
            FAQ_HC_PAGES_PER_ADDRESS_PER_MINUTE="100000000",
            FAQ_HC_SEARCHES_PER_ADDRESS_PER_MINUTE="100000000",
            FAQ_HC_PAGES_PER_ORG_PER_MINUTE="100000000",
            FAQ_HC_SEARCHES_PER_ORG_PER_MINUTE="100000000",
            FAQ_LOG_LEVEL="INFO",
            PYTHONUNBUFFERED="1",
        )
        self.env = env
        os.environ.update(env)
        return self

    def run(self, *args: str, timeout: float = 600, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "faq"), *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
            **kw,
        )

    def spawn(
        self, argv: list[str], log: str, extra_env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> Any:
        out = open(self.tmp / log, "ab")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(
            argv,
            env={**self.env, **(extra_env or {})},
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.children.append(proc)
        return proc

    def serve(self, extra_env: dict[str, str] | None = None, tree: Path | None = None) -> Server:
        """``faq serve`` on the world's services; ``tree``: the code of another checkout (a git
        worktree, ``bench/answers_ab.py``) instead of this one's."""
        port = free_port()
        faq, cwd = [str(BIN / "faq")], ROOT
        if tree is not None:
            faq, cwd = [str(BIN / "python"), "-m", "tasks.cli"], tree
            extra_env = {**(extra_env or {}), "PYTHONPATH": str(tree)}
        proc = self.spawn(
            [*faq, "serve", "--bind", f"127.0.0.1:{port}"], f"serve-{port}.log", extra_env, cwd
        )
        server = Server(port, proc)
        server.wait_ready("/readyz")
        return server

    def reference(self, bodies_dir: Path) -> Server:
        port = free_port()
        proc = self.spawn(
            [str(BIN / "python"), "-m", "bench.reference_app", str(bodies_dir), str(port)],
            f"reference-{port}.log",
        )
        server = Server(port, proc)
        server.wait_ready("/healthz")
        return server

    def psql(self, sql: str, timeout: float = 120) -> str:
        assert self.pg is not None
        from tenancy.embedded import _pg_bin

        out = subprocess.run(
            [
                *(_pg_bin("psql"), "-X", "-At", "-h", "127.0.0.1", "-p", str(self.pg.port)),
                *("-U", "postgres", "-d", "postgres", "-c", sql),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=timeout,
        )
        return out.stdout.strip()

    def stop(self) -> None:
        for proc in self.children:
            stop_process(proc)
        if self.redis is not None:
            self.redis.stop()
        if self.pg is not None:
            self.pg.stop("immediate")


@dataclass
class Server:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, path: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server on port {self.port} exited ({self.proc.returncode})")
            with (
                contextlib.suppress(Exception),
                urllib.request.urlopen(self.base + path, timeout=2) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"server on port {self.port} not ready")

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def backend_rss_kb(world: World) -> dict[int, int]:
    """RSS (kB) of every PostgreSQL client backend, by pid (from /proc, PSS is not needed:
    a backend's private catalog caches are what grows with the number of schemas)."""
    pids = world.psql(
        "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
        "AND pid <> pg_backend_pid()"
    ).split()
    out: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    out[int(pid)] = int(line.split()[1])
    return out
