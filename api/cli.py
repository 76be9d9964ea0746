"""The ``faq`` console script (CONTRACT section 1)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet


def _engine() -> Any:
    from tenancy.db import make_engine
    from tenancy.settings import get_settings

    return make_engine(get_settings(), pool_size=5)


async def _with_engine(work: Any) -> Any:
    engine = _engine()
    try:
        return await work(engine)
    finally:
        await engine.dispose()


# ---- serve / worker / scheduler ------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    from api.app import create_app

    config = Config()
    config.bind = [args.bind]
    config.graceful_timeout = float(os.environ.get("FAQ_GRACEFUL_TIMEOUT_SECONDS", "20"))
    config.accesslog = None
    app = create_app()
    stop = asyncio.Event()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    asyncio.run(main())
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from dramatiq.cli import main as dramatiq_main
    from dramatiq.cli import make_argument_parser

    argv = ["tasks.actors", "--processes", str(args.processes), "--threads", str(args.threads)]
    parsed = make_argument_parser().parse_args(argv)  # type: ignore[no-untyped-call]
    return int(dramatiq_main(parsed) or 0)  # type: ignore[no-untyped-call]


def cmd_scheduler(_args: argparse.Namespace) -> int:
    from tasks.scheduler import run_scheduler

    run_scheduler()
    return 0


# ---- migrate / orgs / keys / jobs ----------------------------------------------------------


def cmd_migrate(_args: argparse.Namespace) -> int:
    from tenancy.schemas import SchemaReport, failed, migrate_tenants, upgrade_shared_schema

    def report(r: SchemaReport) -> None:
        if r.error:
            print(f"tenant {r.org_slug} ({r.schema}): FAILED {r.error}", flush=True)
        else:
            print(f"tenant {r.org_slug} ({r.schema}): applied {', '.join(r.applied)}", flush=True)

    async def work(engine: Any) -> int:
        started = time.perf_counter()
        applied = await upgrade_shared_schema(engine)
        print(f"shared: {'applied ' + ', '.join(applied) if applied else 'at head'}")
        reports = await migrate_tenants(engine, on_report=report)
        elapsed = time.perf_counter() - started
        print(f"tenants: {len(reports)} migrated, {len(failed(reports))} failed ({elapsed:.2f}s)")
        return 1 if failed(reports) else 0

    result: int = asyncio.run(_with_engine(work))
    return result


def cmd_orgs_create(args: argparse.Namespace) -> int:
    from billing.plans import Plan
    from tenancy.orgs import OrgExists, create_org

    async def work(engine: Any) -> Any:
        return await create_org(engine, args.slug, args.name, Plan(args.plan.upper()))

    try:
        org = asyncio.run(_with_engine(work))
    except OrgExists:
        print(f"org {args.slug!r} already exists", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(org.as_json()))
    else:
        print(f"created org {org.slug} ({org.id}) on plan {org.plan.value}")
    return 0


def cmd_orgs_set_plan(args: argparse.Namespace) -> int:
    from billing.plans import Plan
    from tenancy.orgs import OrgNotFound, set_plan

    async def work(engine: Any) -> Any:
        return await set_plan(
            engine, args.slug, Plan(args.plan.upper()), actor={"type": "ops", "id": "cli"}
        )

    try:
        org = asyncio.run(_with_engine(work))
    except OrgNotFound:
        print(f"no org {args.slug!r}", file=sys.stderr)
        return 1
    print(f"org {org.slug} is on plan {org.plan.value}")
    return 0


def cmd_keys_create(args: argparse.Namespace) -> int:
    from tenancy.db import shared_session
    from tenancy.keys import create_key, parse_scopes
    from tenancy.orgs import OrgNotFound, get_org

    try:
        scopes = parse_scopes(args.scopes)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2

    async def work(engine: Any) -> Any:
        org = await get_org(engine, args.slug)
        async with shared_session(engine) as session, session.begin():
            return await create_key(session, org.id, scopes)

    try:
        issued = asyncio.run(_with_engine(work))
    except OrgNotFound:
        print(f"no org {args.slug!r}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"key": issued.key, "fingerprint": issued.fingerprint, "scopes": scopes}))
    else:
        print(f"key (shown once): {issued.key}\nfingerprint: {issued.fingerprint}")
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    from tenancy.db import shared_session
    from tenancy.keys import revoke_key

    async def work(engine: Any) -> bool:
        async with shared_session(engine) as session, session.begin():
            return await revoke_key(session, args.fingerprint)

    if not asyncio.run(_with_engine(work)):
        print(f"no key with fingerprint {args.fingerprint!r}", file=sys.stderr)
        return 1
    print(f"revoked {args.fingerprint}")
    return 0


def cmd_jobs_run(args: argparse.Namespace) -> int:
    import tasks.actors  # noqa: F401  (registers the jobs)
    from tasks.db import dispose_worker_engine
    from tasks.jobs import JOBS

    job = JOBS.get(args.job)
    if job is None:
        print(f"unknown job {args.job!r}; known: {', '.join(sorted(JOBS))}", file=sys.stderr)
        return 2

    async def run() -> Any:
        try:
            return await job.run()
        finally:
            await dispose_worker_engine()

    result = asyncio.run(run())
    print(json.dumps({"job": args.job, "result": result}, default=str))
    return 0


def cmd_secret_key(args: argparse.Namespace) -> int:
    if args.action == "new":
        print(Fernet.generate_key().decode())
        return 0
    return cmd_rotate_secret_key()


def cmd_rotate_secret_key() -> int:
    """Re-encrypt every webhook secret of every org under the newest ``FAQ_SECRET_KEY``."""
    from sqlalchemy import select, update

    from api.webhooks.models import Webhook
    from api.webhooks.signing import reencrypt_secret
    from tenancy.db import shared_session, tenant_session
    from tenancy.models import Organization

    async def work(engine: Any) -> int:
        async with shared_session(engine) as session:
            orgs = (
                await session.execute(
                    select(Organization.slug, Organization.schema_name).order_by(
                        Organization.created_at
                    )
                )
            ).all()
        total = 0
        for slug, schema in orgs:
            async with tenant_session(engine, schema) as session, session.begin():
                rows = (
                    await session.execute(
                        select(Webhook.id, Webhook.secret_ciphertext).with_for_update()
                    )
                ).all()
                for webhook_id, ciphertext in rows:
                    await session.execute(
                        update(Webhook)
                        .where(Webhook.id == webhook_id)
                        .values(secret_ciphertext=reencrypt_secret(ciphertext))
                    )
            total += len(rows)
            print(f"{slug}: {len(rows)} webhook secrets re-encrypted", flush=True)
        print(f"done: {total} webhook secrets now under the newest key")
        return 0

    result: int = asyncio.run(_with_engine(work))
    return result


# ---- dev -----------------------------------------------------------------------------------


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
            key_file.write_text(Fernet.generate_key().decode())
            key_file.chmod(0o600)
        env["FAQ_SECRET_KEY"] = key_file.read_text().strip()
    env.setdefault("FAQ_ENV", "dev")
    return env, servers


def cmd_dev(args: argparse.Namespace) -> int:
    data_dir = Path(os.environ.get("FAQ_DATA_DIR", ".data")).resolve()
    env, servers = _dev_environment(data_dir)
    faq = [sys.executable, "-m", "api.cli"]
    children: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run([*faq, "migrate"], env=env, check=True)
        created = subprocess.run(
            [*faq, "orgs", "create", "demo", "--name", "Demo", "--plan", "STARTER", "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        if created.returncode == 0:
            key = subprocess.run(
                [*faq, "keys", "create", "demo", "--scopes", "admin", "--json"],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            issued = json.loads(key.stdout)
            print("\norg 'demo' created on plan STARTER. Admin API key (shown once):")
            print(f"  {issued['key']}\n")
            print(
                f"  curl -H 'Authorization: Bearer {issued['key']}' "
                f"http://{args.bind}/api/v1/demo/categories\n"
            )
        else:
            print(
                "\norg 'demo' exists (data reused). New key: "
                ".venv/bin/faq keys create demo --scopes admin\n"
            )
        children = [
            subprocess.Popen([*faq, "serve", "--bind", args.bind], env=env),
            subprocess.Popen([*faq, "worker", "--processes", "1", "--threads", "8"], env=env),
            subprocess.Popen([*faq, "scheduler"], env=env),
        ]
        print(f"API on http://{args.bind} (docs: http://{args.bind}/docs). Ctrl-C stops all.")
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
        for server in reversed(servers):
            server.stop()


# ---- argument parsing ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="faq", description="FAQ service")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API under Hypercorn")
    serve.add_argument("--bind", default="127.0.0.1:8000")
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="run the Dramatiq worker for all actors")
    worker.add_argument(
        "--processes", type=int, default=int(os.environ.get("FAQ_WORKER_PROCESSES", "1"))
    )
    worker.add_argument(
        "--threads", type=int, default=int(os.environ.get("FAQ_WORKER_THREADS", "8"))
    )
    worker.set_defaults(func=cmd_worker)

    sub.add_parser("scheduler", help="enqueue periodic jobs").set_defaults(func=cmd_scheduler)
    sub.add_parser("migrate", help="migrate shared, then every tenant schema").set_defaults(
        func=cmd_migrate
    )

    orgs = sub.add_parser("orgs").add_subparsers(dest="orgs_command", required=True)
    create = orgs.add_parser("create")
    create.add_argument("slug")
    create.add_argument("--name")
    create.add_argument(
        "--plan", default="FREE", type=str.upper, choices=["FREE", "STARTER", "PRO", "ENTERPRISE"]
    )
    create.add_argument("--json", action="store_true")
    create.set_defaults(func=cmd_orgs_create)
    set_plan = orgs.add_parser("set-plan")
    set_plan.add_argument("slug")
    set_plan.add_argument("plan", type=str.upper, choices=["FREE", "STARTER", "PRO", "ENTERPRISE"])
    set_plan.set_defaults(func=cmd_orgs_set_plan)

    keys = sub.add_parser("keys").add_subparsers(dest="keys_command", required=True)
    key_create = keys.add_parser("create")
    key_create.add_argument("slug")
    key_create.add_argument("--scopes", required=True)
    key_create.add_argument("--json", action="store_true")
    key_create.set_defaults(func=cmd_keys_create)
    revoke = keys.add_parser("revoke")
    revoke.add_argument("fingerprint")
    revoke.set_defaults(func=cmd_keys_revoke)

    jobs = sub.add_parser("jobs").add_subparsers(dest="jobs_command", required=True)
    run = jobs.add_parser("run")
    run.add_argument("job")
    run.set_defaults(func=cmd_jobs_run)

    dev = sub.add_parser("dev", help="what `make run` calls: embedded services + everything")
    dev.add_argument("--bind", default="127.0.0.1:8000")
    dev.set_defaults(func=cmd_dev)

    secret_key = sub.add_parser(
        "secret-key",
        help="`new`: print a new FAQ_SECRET_KEY; `rotate`: re-encrypt webhook secrets "
        "under the newest key of FAQ_SECRET_KEY (NEW,OLD)",
    )
    secret_key.add_argument("action", nargs="?", choices=["new", "rotate"], default="new")
    secret_key.set_defaults(func=cmd_secret_key)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
