"""Where ``faq dev`` tells the other ``faq`` commands about the servers it runs.

``faq dev`` writes ``<data dir>/dev-services.json`` (``FAQ_DATA_DIR``, default ``.data``): its
process id and the variables it supplied to its processes (the embedded PostgreSQL's and
Redis' URLs, the dev ``FAQ_SECRET_KEY``), and removes it when it stops. Any other command
run while it runs, with those variables unset, takes them from there: ``faq analytics demo``
works beside ``make run``. A file left by a ``faq dev`` that no longer runs is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

FILE_NAME = "dev-services.json"
SHARED = ("DATABASE_URL", "REDIS_URL", "FAQ_SECRET_KEY", "FAQ_ENV")


def data_dir() -> Path:
    return Path(os.environ.get("FAQ_DATA_DIR", ".data")).resolve()


def services_file(directory: Path | None = None) -> Path:
    return (directory or data_dir()) / FILE_NAME


def write_services(directory: Path, supplied: dict[str, str]) -> Path:
    """Record what this ``faq dev`` supplied (readable by its user only: it holds a key)."""
    path = services_file(directory)
    tmp = path.with_suffix(".tmp")
    tmp.touch(mode=0o600)
    tmp.chmod(0o600)  # also a leftover of an earlier run
    tmp.write_text(json.dumps({"pid": os.getpid(), "env": supplied}, indent=2) + "\n")
    tmp.replace(path)
    return path


def remove_services(directory: Path) -> None:
    path = services_file(directory)
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()


def _running(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def adopt_dev_services() -> bool:
    """When ``DATABASE_URL`` or ``REDIS_URL`` is unset and a running ``faq dev`` recorded its
    servers, set the variables it supplied that are unset; True if it did."""
    if os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL"):
        return False
    try:
        recorded = json.loads(services_file().read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(recorded, dict) or not _running(recorded.get("pid")):
        return False
    supplied = recorded.get("env")
    if not isinstance(supplied, dict):
        return False
    for name in SHARED:
        value = supplied.get(name)
        if isinstance(value, str) and value and not os.environ.get(name):
            os.environ[name] = value
    return True
