"""Start, watch and stop the service's processes the way a kubelet would."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from tests.helm.rendering import REPO

LOCAL_FAQ = str(REPO / ".venv" / "bin" / "faq")


@dataclass
class Running:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@dataclass
class Processes:
    logs: Path
    cwd: Path
    running: list[Running] = field(default_factory=list)

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> Running:
        log = self.logs / f"{name}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                argv,
                env=env,
                cwd=self.cwd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        child = Running(name, process, log)
        self.running.append(child)
        return child

    def wait_for(self, what: str, check: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in self.running:
                if child.process.poll() is not None:
                    pytest.fail(
                        f"{child.name} exited ({child.process.returncode}):\n{child.output()}"
                    )
            try:
                if check():
                    return
            except (OSError, redis.RedisError):
                pass
            time.sleep(0.25)
        logs = "\n".join(f"--- {c.name}\n{c.output()[-3000:]}" for c in self.running)
        pytest.fail(f"timed out waiting for {what}\n{logs}")

    def kill_leftovers(self) -> None:
        for child in self.running:
            if child.process.poll() is None:
                os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait(10)


@contextmanager
def processes(tmp_path: Path, cwd: Path) -> Iterator[Processes]:
    group = Processes(logs=tmp_path, cwd=cwd)
    try:
        yield group
    finally:
        group.kill_leftovers()


def http(
    method: str, url: str, headers: dict[str, str] | None = None, body: bytes | None = None
) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
