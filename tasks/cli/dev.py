"""``faq dev`` (what ``make run`` calls): embedded PostgreSQL and Redis unless their URLs are
set, ``faq migrate``, a ``demo`` org with an admin key on first run, then the API, one worker
and the scheduler as child processes until Ctrl-C (or one of them exits).

Every process logs in the console's format (``FAQ_LOG_FORMAT=console``, unless set otherwise),
idle periodic jobs say nothing, and the servers' URLs are written where the other ``faq``
commands find them (``dev_services.py``) while it runs."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from tasks.cli.dev_services import SHARED, data_dir, remove_services, write_services
from tasks.cli.secrets import new_secret_key

FAQ = [sys.executable, "-m", "tasks.cli"]


def _dev_environment(folder: Path, servers: list[Any]) -> dict[str, str]:
    """Start embedded PostgreSQL/Redis unless their URLs are set (each added to ``servers``
    once it runs, so an interruption stops those already started); returns the env."""
    from tenancy.embedded import EmbeddedPostgres, EmbeddedRedis

    env = dict(os.environ)
    folder.mkdir(parents=True, exist_ok=True)
    if not env.get("DATABASE_URL"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pgserver's platformdirs on XDG_RUNTIME_DIR
            pg = EmbeddedPostgres(folder / "postgres").start()
        servers.append(pg)
        env["DATABASE_URL"] = pg.url
        print(f"embedded PostgreSQL: {pg.url}")
    if not env.get("REDIS_URL"):
        rd = EmbeddedRedis(folder / "redis").start()
        servers.append(rd)
        env["REDIS_URL"] = rd.url
        print(f"embedded Redis: {rd.url}")
    if not env.get("FAQ_SECRET_KEY"):
        key_file = folder / "secret_key"
        if not key_file.exists():
            key_file.write_text(new_secret_key())
            key_file.chmod(0o600)
        env["FAQ_SECRET_KEY"] = key_file.read_text().strip()
    env.setdefault("FAQ_ENV", "dev")
    env.setdefault("FAQ_LOG_FORMAT", "console")
    return env


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
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # before its children's lines, in a file too
    directory = data_dir()
    servers: list[Any] = []
    children: list[subprocess.Popen[bytes]] = []
    # SIGTERM stops everything as Ctrl-C does, from the start (servers included).
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        env = _dev_environment(directory, servers)
        supplied = {n: env[n] for n in SHARED if env.get(n) and env[n] != os.environ.get(n)}
        write_services(directory, supplied)
        subprocess.run([*FAQ, "migrate"], env=env, check=True)
        _demo_org(env, args.bind)
        children = [
            _spawn([*FAQ, "serve", "--bind", args.bind], env),
            _spawn([*FAQ, "worker", "--processes", "1", "--threads", "8"], env),
            _spawn([*FAQ, "scheduler"], env),
        ]
        print(f"API on http://{args.bind} (docs: http://{args.bind}/docs). Ctrl-C stops all.")
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        remove_services(directory)
        _stop(children, servers)
