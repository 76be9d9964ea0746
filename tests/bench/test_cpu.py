"""``bench/cpu.py``: the /proc parsing and the process-tree sums the CPU columns rest on."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.cpu import CLOCK_TICKS, Meter, parse_stat, per_thousand, tree_cpu


def test_parse_stat_reads_ppid_and_all_four_cpu_fields_despite_a_tricky_command_name() -> None:
    # A command name with spaces and a ')' (allowed): fields are counted after the last ')'.
    fields = ["S", "42"] + ["0"] * 9 + ["100", "50", "20", "30"] + ["0"] * 30
    text = "1234 (we ird) name) " + " ".join(fields)
    ppid, seconds = parse_stat(text)
    assert ppid == 42
    assert seconds == 200 / CLOCK_TICKS


def test_tree_cpu_sums_a_root_and_its_descendants_only() -> None:
    table = {1: (0, 1.0), 10: (1, 2.0), 11: (10, 4.0), 20: (0, 8.0), 21: (20, 16.0)}
    assert tree_cpu([10], table) == 6.0
    assert tree_cpu([1], table) == 7.0
    assert tree_cpu([10, 20], table) == 30.0
    assert tree_cpu([999], table) == 0.0


def test_meter_sees_the_cpu_a_child_process_burns() -> None:
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    meter = Meter({"me": [os.getpid()]})
    before = meter.sample()
    child = subprocess.Popen([sys.executable, "-c", burn + "time.sleep(30)"])
    try:
        deadline = time.monotonic() + 20
        while meter.sample()["me"] - before["me"] < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        used = meter.sample()["me"] - before["me"]
    finally:
        child.kill()
        child.wait()
    assert used >= 0.3
    assert per_thousand(before, {"me": before["me"] + 0.5}, 500) == {"me": 1.0}
