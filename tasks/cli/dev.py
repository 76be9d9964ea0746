"""``faq dev`` (what ``make run`` calls): embedded PostgreSQL and Redis unless their URLs are
set, ``faq migrate``, a ``demo`` org with an admin key on first run, then the API, one worker
and the scheduler as child processes until Ctrl-C (or one of them exits)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tasks.cli.secrets import new_secret_key

FAQ = [sys.executable, "-m", "tasks.cli"]


def _dev_environment(data_dir: Path) -> tuple[dict[str, str], list[Any]]:
    """Start embedded PostgreSQL/Redis unless their URLs are set; returns env and servers."""
    from tenancy.embedded import EmbeddedPostgres, EmbeddedRedis

    env = dict(os.environ)
    servers: list[Any] = []
    data_dir.mkdir(parents=True, exist_ok=True)
    if not env.get("DATABASE_URL"):
        pg = EmbeddedPostgres(data_dir / "postgres").start()
        servers.append(pg)
        env["DATABASE_URL"] = pg.url
        print(f"embedded PostgreSQL: {pg.url}")
    if not env.get("REDIS_URL"):
        rd = EmbeddedRedis(data_dir / "redis").start()
        servers.append(rd)
        env["REDIS_URL"] = rd.url
        print(f"embedded Redis: {rd.url}")
    if not env.get("FAQ_SECRET_KEY"):
        key_file = data_dir / "secret_key"
        if not key_file.exists():
            key_file.write_text(new_secret_key())
            key_file.chmod(0o600)
        env["FAQ_SECRET_KEY"] = key_file.read_text().strip()
    env.setdefault("FAQ_ENV", "dev")
    return env, servers


def _demo_org(env: dict[str, str], bind: str) -> None:
    """Create the ``demo`` org and print an admin key, or say it exists (data reused)."""
    created = subprocess.run(
        [*FAQ, "orgs", "create", "demo", "--name", "Demo", "--plan", "STARTER", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    if created.returncode != 0:
        print(
            "\norg 'demo' exists (data reused). New key: "
            ".venv/bin/faq keys create demo --scopes admin\n"
        )
        return
    key = subprocess.run(
        [*FAQ, "keys", "create", "demo", "--scopes", "admin", "--json"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    issued = json.loads(key.stdout)
    print("\norg 'demo' created on plan STARTER. Admin API key (shown once):")
    print(f"  {issued['key']}\n")
    print(
        f"  curl -H 'Authorization: Bearer {issued['key']}' http://{bind}/api/v1/demo/categories\n"
    )


def _spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A child in a process group of its own, so stopping it reaches what it forked (the
    worker's processes) even when ``faq dev`` itself gets SIGTERM rather than a terminal's
    Ctrl-C (which signals the whole foreground group)."""
    return subprocess.Popen(argv, env=env, start_new_session=True)


def _signal_group(child: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, sig)


def _stop(children: list[subprocess.Popen[bytes]], servers: list[Any]) -> None:
    """SIGTERM each child (it stops what it forked, gracefully), wait up to 30 s each, then
    SIGKILL whatever is left of its group; stop the servers only once nothing uses them."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(30)
        _signal_group(child, signal.SIGKILL)  # a grandchild that outlived its parent
    for server in reversed(servers):
        server.stop()


def cmd_dev(args: argparse.Namespace) -> int:
    data_dir = Path(os.environ.get("FAQ_DATA_DIR", ".data")).resolve()
    env, servers = _dev_environment(data_dir)
    children: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run([*FAQ, "migrate"], env=env, check=True)
        _demo_org(env, args.bind)
        children = [
            _spawn([*FAQ, "serve", "--bind", args.bind], env),
            _spawn([*FAQ, "worker", "--processes", "1", "--threads", "8"], env),
            _spawn([*FAQ, "scheduler"], env),
        ]
        print(f"API on http://{args.bind} (docs: http://{args.bind}/docs). Ctrl-C stops all.")
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        _stop(children, servers)
