"""CPU seconds of process trees, read from ``/proc``: a process and all its descendants
(``utime + stime``, plus ``cutime + cstime``: what the children it has reaped used, so a
PostgreSQL backend that exits between two samples still counts, in the postmaster).

A ``Meter`` names a few groups (``api``, ``worker``, ``postgres``...) by their root pids; sample
before and after a load run and ``per_thousand`` gives the CPU seconds each group spent per
1,000 requests of that run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def parse_stat(text: str) -> tuple[int, float]:
    """``(ppid, cpu seconds)`` from the text of ``/proc/<pid>/stat``. The command name (field
    2) is in parentheses and may hold spaces or parentheses: split after the last ``)``."""
    rest = text[text.rindex(")") + 2 :].split()
    # rest[0] is field 3 (state): ppid is field 4, utime/stime/cutime/cstime fields 14-17.
    ppid = int(rest[1])
    ticks = sum(int(rest[i]) for i in (11, 12, 13, 14))
    return ppid, ticks / CLOCK_TICKS


def _all_processes(proc: Path = PROC) -> dict[int, tuple[int, float]]:
    out: dict[int, tuple[int, float]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            out[int(entry.name)] = parse_stat((entry / "stat").read_text())
    return out


def tree_cpu(roots: Iterable[int], table: Mapping[int, tuple[int, float]]) -> float:
    """CPU seconds of the roots and every descendant in ``table`` (pid -> (ppid, seconds))."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    seen: set[int] = set()
    todo = [pid for pid in roots if pid in table]
    total = 0.0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += table[pid][1]
        todo.extend(children.get(pid, ()))
    return total


@dataclass
class Meter:
    """Process groups by root pids: ``Meter({"api": [pid], "postgres": [postmaster]})``."""

    groups: dict[str, list[int]] = field(default_factory=dict)

    def sample(self) -> dict[str, float]:
        table = _all_processes()
        return {name: tree_cpu(pids, table) for name, pids in self.groups.items()}


def per_thousand(
    before: Mapping[str, float], after: Mapping[str, float], requests: int
) -> dict[str, float]:
    """CPU seconds per 1,000 requests, per group."""
    return {
        name: round((after[name] - before[name]) * 1000 / max(requests, 1), 3) for name in after
    }


LABELS = {"api": "API", "worker": "worker", "postgres": "PostgreSQL", "redis": "Redis"}


def describe(cpu: Mapping[str, float]) -> str:
    """``CPU s/1k req: API 0.51, worker 0.00, PostgreSQL 0.12``."""
    return "CPU s/1k req: " + ", ".join(f"{LABELS.get(k, k)} {v:.2f}" for k, v in cpu.items())


def postmaster_pid(pgdata: Path) -> int:
    """The postmaster's pid: the first line of ``postmaster.pid`` in the data directory."""
    return int((pgdata / "postmaster.pid").read_text().split()[0])


def py_spy(
    pid: int, out: Path, seconds: float, *, subprocesses: bool = False
) -> subprocess.Popen[bytes]:
    """py-spy (from the venv) recording ``pid`` (and its children with ``subprocesses``) for
    ``seconds`` at 200 Hz, as raw collapsed stacks in ``out``; ``top_frames`` of
    ``bench.delivery_rate`` reads them."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return subprocess.Popen(
        [
            *(spy, "record", "--pid", str(pid), "--rate", "200", "--format", "raw"),
            *(["--subprocesses"] if subprocesses else []),
            *("--duration", str(max(int(seconds), 1)), "--nonblocking", "-o", str(out)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
