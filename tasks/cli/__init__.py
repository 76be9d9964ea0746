"""The ``faq`` console script (CONTRACT section 1): the composition root, the one place that
may import every layer.

``build_parser`` declares the commands; each command lives in a module of this package:
``processes.py`` (serve, worker, scheduler), ``ops.py`` (migrate, orgs, keys, jobs run),
``dev.py`` (the ``faq dev`` supervisor), ``secrets.py`` (secret-key new|rotate) and
``analytics.py`` (``faq analytics SLUG``, ``faq analytics gaps SLUG``). ``dev_services.py``:
the servers of a running ``faq dev``, used by every other command; ``config_errors.py``: a
configuration error as one line; ``worker_broker.py``: the broker ``faq worker`` runs,
logging in the process format.
Commands import what they need when they run, so ``faq --help`` stays quick.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from tasks.cli.analytics import cmd_analytics
from tasks.cli.config_errors import configuration_problem
from tasks.cli.dev import cmd_dev
from tasks.cli.dev_services import adopt_dev_services
from tasks.cli.embeddings import add_embeddings_parser
from tasks.cli.ops import (
    cmd_jobs_run,
    cmd_keys_create,
    cmd_keys_revoke,
    cmd_migrate,
    cmd_orgs_create,
    cmd_orgs_ensure,
    cmd_orgs_set_plan,
)
from tasks.cli.processes import cmd_scheduler, cmd_serve, cmd_worker
from tasks.cli.secrets import cmd_secret_key
from tasks.cli.transfer import add_transfer_parsers

PLANS = ["FREE", "STARTER", "PRO", "ENTERPRISE"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="faq", description="FAQ service")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API under Hypercorn")
    serve.add_argument(
        "--bind", default="127.0.0.1:8000", metavar="HOST:PORT", help="default 127.0.0.1:8000"
    )
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="run the Dramatiq worker for all actors")
    worker.add_argument(
        "--processes", type=int, default=int(os.environ.get("FAQ_WORKER_PROCESSES", "1"))
    )
    worker.add_argument(
        "--threads", type=int, default=int(os.environ.get("FAQ_WORKER_THREADS", "8"))
    )
    worker.add_argument(
        "--shutdown-seconds",
        type=float,
        default=float(os.environ.get("FAQ_WORKER_SHUTDOWN_SECONDS", "30")),
        help="on SIGTERM, how long in-flight messages may finish (default 30; the chart: its "
        "grace period less 10)",
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
    create.add_argument("--plan", default="FREE", type=str.upper, choices=PLANS)
    create.add_argument("--locale", default="en", help="BCP 47 tag: the default and only locale")
    create.add_argument("--json", action="store_true")
    create.set_defaults(func=cmd_orgs_create)
    ensure = orgs.add_parser(
        "ensure",
        help="the org and its first admin member, made when missing (a new admin member "
        "gets an admin key, printed once); what `faq dev` runs",
    )
    ensure.add_argument("slug")
    ensure.add_argument("--name")
    ensure.add_argument(
        "--plan", default="FREE", type=str.upper, choices=PLANS, help="a new org's plan"
    )
    ensure.add_argument("--locale", default="en", help="a new org's locale (BCP 47)")
    ensure.add_argument(
        "--admin-email", required=True, help="the first admin member's, when one is made"
    )
    ensure.add_argument("--admin-name", default="Admin")
    ensure.add_argument("--json", action="store_true")
    ensure.set_defaults(func=cmd_orgs_ensure)
    set_plan = orgs.add_parser("set-plan")
    set_plan.add_argument("slug")
    set_plan.add_argument("plan", type=str.upper, choices=PLANS)
    set_plan.set_defaults(func=cmd_orgs_set_plan)

    keys = sub.add_parser("keys").add_subparsers(dest="keys_command", required=True)
    key_create = keys.add_parser("create")
    key_create.add_argument("slug")
    key_create.add_argument("--scopes", required=True, help="read,write,admin or public")
    key_create.add_argument("--name", default="", help="what the key is for")
    key_create.add_argument(
        "--origins", default="", help="public keys: comma list of https://host[:port]"
    )
    key_create.add_argument("--expires", default="", help="ISO 8601 time with an offset or Z")
    key_create.add_argument("--member", default="", help="the member (mem_…) the key is for")
    key_create.add_argument("--json", action="store_true")
    key_create.set_defaults(func=cmd_keys_create)
    revoke = keys.add_parser("revoke")
    revoke.add_argument("fingerprint")
    revoke.set_defaults(func=cmd_keys_revoke)

    jobs = sub.add_parser("jobs").add_subparsers(dest="jobs_command", required=True)
    run = jobs.add_parser("run")
    run.add_argument("job")
    run.set_defaults(func=cmd_jobs_run)

    report = sub.add_parser(
        "analytics", help="an org's top searches, zero-result searches and least helpful answers"
    )
    report.add_argument("slug", help="the org, or `gaps` then the org (`faq analytics gaps SLUG`)")
    report.add_argument("org", nargs="?", help=argparse.SUPPRESS)
    report.add_argument("--limit", type=int, default=10, choices=range(1, 101), metavar="1..100")
    report.set_defaults(func=cmd_analytics)

    add_embeddings_parser(sub)
    add_transfer_parsers(sub)

    dev = sub.add_parser("dev", help="what `make run` calls: embedded services + everything")
    dev.add_argument(
        "--bind",
        default="127.0.0.1:8000",
        metavar="HOST:PORT",
        help="where the API listens (default 127.0.0.1:8000; `make run PORT=8080` sets the port)",
    )
    dev.add_argument(
        "--plan",
        type=str.upper,
        choices=PLANS,
        help="the demo org's plan (default: STARTER when it is made, else unchanged; "
        "`make run PLAN=PRO` to try review before publishing)",
    )
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
    """Run one command. Beside a running ``faq dev`` a command uses its servers
    (``dev_services.py``); a configuration error is one line on stderr and exit status 2."""
    args = build_parser().parse_args(argv)
    if args.command != "dev":
        adopt_dev_services()
    try:
        result: int = args.func(args)
    except Exception as exc:
        problem = configuration_problem(exc)
        if problem is None:
            raise
        print(f"faq {args.command}: {problem}", file=sys.stderr)
        return 2
    return result
