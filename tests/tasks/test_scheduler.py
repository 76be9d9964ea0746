"""`faq scheduler`: one active scheduler (Redis lock); a killed one is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from tasks.scheduler import LOCK_NAME

pytestmark = pytest.mark.slow


def start_scheduler(log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FAQ_SCHEDULER_LOCK_TTL_SECONDS": "3", "FAQ_LOG_LEVEL": "INFO"}
    return subprocess.Popen(
        [sys.executable, "-m", "tasks.cli", "scheduler"],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


def wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_a_killed_scheduler_is_replaced(tmp_path: Path) -> None:
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    client.delete(LOCK_NAME)
    first = start_scheduler(tmp_path / "first.log")
    second: subprocess.Popen[bytes] | None = None
    try:
        assert wait_for(lambda: client.get(LOCK_NAME) is not None, 20)
        holder = client.get(LOCK_NAME)
        second = start_scheduler(tmp_path / "second.log")
        time.sleep(2.5)
        # Only one is active: the lock still belongs to the first.
        assert client.get(LOCK_NAME) == holder
        assert "scheduler_lock_acquired" not in (tmp_path / "second.log").read_text()
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert wait_for(
            lambda: "scheduler_lock_acquired" in (tmp_path / "second.log").read_text(), 15
        )
        assert client.get(LOCK_NAME) not in (None, holder)
        # The new holder enqueues the jobs right after it logs the lock (a line later).
        assert wait_for(lambda: "job_enqueued" in (tmp_path / "second.log").read_text(), 5)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(10)
    # A clean stop releases the lock at once.
    assert wait_for(lambda: client.get(LOCK_NAME) is None, 5)
