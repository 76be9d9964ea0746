"""The CPU priority of batch work: an import's converters and `faq import`, a worker's model
threads. They yield the CPU to requests (of every org) when it is short; alone on a machine
they run as fast. Between pods the CPU requests and limits decide instead."""

from __future__ import annotations

import os
import sys
import threading

NICENESS = 10


def lower_thread_priority() -> None:
    """This thread (only: Linux schedules threads alone) yields the CPU to requests: its
    niceness becomes ``NICENESS``, or stays higher."""
    if not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, max(now, NICENESS))
    except OSError:  # not allowed here: the thread keeps the process's priority
        return
