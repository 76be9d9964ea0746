"""``faq worker`` stops on SIGTERM (issue 42). Sent to its process group (``faq dev``, a terminal,
``kill -- -PGID``), the signal reaches a worker process twice: directly and forwarded by
Dramatiq's main process. Dramatiq took the copy as "kill now", raised ``SystemExit`` without
stopping its threads, and the process hung until SIGKILL (measured: still alive after 4 s and
after 60 s). Now the copy is the same stop, and a later SIGTERM really ends the process."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from tests.fixtures.receiver import Process
from tests.fixtures.services import Services

pytestmark = pytest.mark.slow

SHUTDOWN_SECONDS = 5  # the worker's grace for in-flight messages (there are none here)


def start_worker(services: Services, name: str) -> Process:
    process = Process(
        "worker",
        [
            sys.executable,
            "-m",
            "tasks.cli",
            "worker",
            "--processes",
            "1",
            "--threads",
            "2",
            "--shutdown-seconds",
            str(SHUTDOWN_SECONDS),
        ],
        {**os.environ, "FAQ_LOG_LEVEL": "INFO"},
        services.root / f"{name}.log",
    )
    process.start(ready="Worker process is ready")
    return process


def seconds_to_exit(process: Process, timeout: float = 60) -> float:
    assert process.popen is not None
    started = time.monotonic()
    while process.popen.poll() is None and time.monotonic() - started < timeout:
        time.sleep(0.05)
    return time.monotonic() - started


def test_sigterm_to_the_process_group_stops_the_worker(services: Services) -> None:
    worker = start_worker(services, "shutdown-group")
    assert worker.popen is not None
    try:
        os.killpg(worker.popen.pid, signal.SIGTERM)
        took = seconds_to_exit(worker)
        assert worker.popen.poll() is not None, "the worker is still running after 60 s"
        assert took < SHUTDOWN_SECONDS + 10, took
        # Its forked worker process went with it: nothing of the group is left.
        time.sleep(0.5)
        try:
            os.killpg(worker.popen.pid, 0)
            left = True
        except ProcessLookupError:
            left = False
        assert not left, "a process of the worker's group outlived it"
    finally:
        worker.kill()


def test_sigterm_to_the_main_process_alone_stops_the_worker(services: Services) -> None:
    worker = start_worker(services, "shutdown-main")
    assert worker.popen is not None
    try:
        worker.popen.send_signal(signal.SIGTERM)
        took = seconds_to_exit(worker)
        assert worker.popen.poll() is not None and took < SHUTDOWN_SECONDS + 10, took
    finally:
        worker.kill()
