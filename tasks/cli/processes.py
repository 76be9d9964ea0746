"""The long-running processes: ``faq serve`` (the API under Hypercorn), ``faq worker``
(``dramatiq tasks.worker``) and ``faq scheduler`` (``tasks.scheduler.run_scheduler``).

Each logs every line, its libraries' included, in one format (``tenancy/process_logging.py``:
JSON, or the console's under ``faq dev``), and checks the settings it needs before it starts,
so a missing variable is one line (``config_errors.py``), not a traceback in a child process.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypercorn.config import Config

    from tenancy.settings import Settings


def hypercorn_config(args: argparse.Namespace, settings: Settings) -> Config:
    """Hypercorn's settings for ``faq serve``. ``keep_alive_timeout`` (Hypercorn's default: 5 s)
    is ``FAQ_KEEP_ALIVE_SECONDS``: a proxy reusing an idle connection must never find it being
    closed, so it outlives the proxy's own idle timeout."""
    from hypercorn.config import Config

    config = Config()
    config.bind = [args.bind]
    config.graceful_timeout = float(os.environ.get("FAQ_GRACEFUL_TIMEOUT_SECONDS", "20"))
    config.keep_alive_timeout = settings.faq_keep_alive_seconds
    config.accesslog = None
    # Hypercorn's own logger, not its stderr handler: its lines ("Running on …") go through
    # the process's format, once (a handler of its own printed them a second time).
    config.errorlog = logging.getLogger("hypercorn.error")
    return config


def cmd_serve(args: argparse.Namespace) -> int:
    from hypercorn.asyncio import serve

    from api.app import create_app
    from tenancy.settings import get_settings

    settings = get_settings()
    settings.require_database_url()
    settings.require_redis_url()
    config = hypercorn_config(args, settings)
    app = create_app(settings)
    stop = asyncio.Event()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    asyncio.run(main())
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Dramatiq's worker on ``tasks.cli.worker_broker`` (``tasks.worker``'s broker, whose
    processes log in the process format); Dramatiq's own lines take the same format
    (``--skip-logging``: it leaves the logging configured here alone)."""
    from dramatiq.cli import main as dramatiq_main
    from dramatiq.cli import make_argument_parser

    from tenancy.process_logging import configure_process_logging
    from tenancy.settings import get_settings

    settings = get_settings()
    settings.require_database_url()
    settings.require_redis_url()
    configure_process_logging(settings.faq_log_level, quiet_idle_jobs=True)
    argv = [
        "tasks.cli.worker_broker",
        "--processes",
        str(args.processes),
        "--threads",
        str(args.threads),
        "--worker-shutdown-timeout",
        str(int(args.shutdown_seconds * 1000)),
        "--skip-logging",
    ]
    parsed = make_argument_parser().parse_args(argv)  # type: ignore[no-untyped-call]
    return int(dramatiq_main(parsed) or 0)  # type: ignore[no-untyped-call]


def cmd_scheduler(_args: argparse.Namespace) -> int:
    from tasks.scheduler import run_scheduler
    from tenancy.process_logging import configure_process_logging
    from tenancy.settings import get_settings

    settings = get_settings()
    settings.require_redis_url()
    configure_process_logging(settings.faq_log_level, quiet_idle_jobs=True)
    run_scheduler()
    return 0
