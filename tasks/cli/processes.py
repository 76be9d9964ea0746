"""The long-running processes: ``faq serve`` (the API under Hypercorn), ``faq worker``
(``dramatiq tasks.worker``) and ``faq scheduler`` (``tasks.scheduler.run_scheduler``)."""

from __future__ import annotations

import argparse
import asyncio
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
    return config


def cmd_serve(args: argparse.Namespace) -> int:
    from hypercorn.asyncio import serve

    from api.app import create_app
    from tenancy.settings import get_settings

    settings = get_settings()
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
    from dramatiq.cli import main as dramatiq_main
    from dramatiq.cli import make_argument_parser

    argv = ["tasks.worker", "--processes", str(args.processes), "--threads", str(args.threads)]
    parsed = make_argument_parser().parse_args(argv)  # type: ignore[no-untyped-call]
    return int(dramatiq_main(parsed) or 0)  # type: ignore[no-untyped-call]


def cmd_scheduler(_args: argparse.Namespace) -> int:
    from tasks.scheduler import run_scheduler

    run_scheduler()
    return 0
