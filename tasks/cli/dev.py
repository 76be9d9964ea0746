"""``faq dev`` (what ``make run`` calls): embedded PostgreSQL and Redis unless their URLs are
set, ``faq migrate``, a ``demo`` org (``faq orgs ensure``) whose first admin member's admin key
is printed on first run (a key of a member: it can approve a draft someone else wrote), on
STARTER or ``--plan`` (``make run PLAN=PRO``: review before publishing), then the API, one
worker and the scheduler as child processes until Ctrl-C (or one of them exits).

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


DEMO = "demo"
DEMO_ADMIN = "admin@demo.example"


def _faq_json(argv: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    """What ``faq ARGV`` printed as JSON; None, its error said, when it failed."""
    done = subprocess.run([*FAQ, *argv], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"faq {' '.join(argv[:3])}: {done.stderr.strip()}")
        return None
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _demo_org(env: dict[str, str], bind: str, plan: str | None) -> None:
    """The ``demo`` org and its first admin member (made when missing: a new org on ``plan``,
    else STARTER; an existing org moved to ``plan`` when one is given), and what to try."""
    ensure = ["orgs", "ensure", DEMO, "--name", "Demo", "--plan", plan or "STARTER"]
    ensured = _faq_json([*ensure, "--admin-email", DEMO_ADMIN, "--json"], env)
    if ensured is None:
        return
    org, admin, key = ensured["org"], ensured["admin"], ensured["key"]
    if plan and org["plan"] != plan:
        subprocess.run([*FAQ, "orgs", "set-plan", DEMO, plan], env=env, check=True)
        org["plan"] = plan
    who = f"its first admin member {admin['email']} ({admin['id']})"
    if ensured["created"]:
        print(f"\norg '{DEMO}' created on plan {org['plan']}. Admin API key of {who}, shown once:")
    elif key:
        print(f"\norg '{DEMO}' exists (data reused), on plan {org['plan']}; it had no admin")
        print(f"member: {admin['email']} ({admin['id']}) was added. Its admin API key, shown once:")
    else:
        print(
            f"\norg '{DEMO}' exists (data reused), on plan {org['plan']}. A new key of {who}: "
            f".venv/bin/faq keys create {DEMO} --scopes admin --member {admin['id']}"
        )
    if key:
        print(f"  {key}\n")
        print(f"  curl -H 'Authorization: Bearer {key}' http://{bind}/api/v1/{DEMO}/categories\n")
    if org["plan"] not in ("PRO", "ENTERPRISE"):
        print(
            "Review before publishing needs PRO: `make run PLAN=PRO`, or "
            f"`.venv/bin/faq orgs set-plan {DEMO} PRO` beside it (docs/team-publishing.md).\n"
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
        _demo_org(env, args.bind, args.plan)
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
