"""``faq import`` and ``faq export``, run as ops run them: the same code as the API, in the
command's own process, with a progress bar and the report as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.api.imports.helpers import FIXTURES, all_questions
from tests.fixtures.orgs import OrgClient
from tests.test_cli import faq

pytestmark = pytest.mark.slow


async def test_faq_import_and_export(org: OrgClient, other_org: OrgClient, tmp_path: Path) -> None:
    dry = await asyncio.to_thread(
        faq, "import", org.slug, str(FIXTURES / "faq.csv"), "--format", "csv", "--dry-run"
    )
    assert dry.returncode == 2, dry.stderr  # the fr row fails: fr is not enabled here
    assert json.loads(dry.stdout)["dryRun"] is True
    assert await all_questions(org) == []

    done = await asyncio.to_thread(
        faq, "import", org.slug, str(FIXTURES / "faq.csv"), "--format", "csv"
    )
    report = json.loads(done.stdout)
    assert report["status"] == "succeeded"
    assert report["counts"]["created"] == 5 and report["counts"]["failed"] == 1
    assert report["errors"][0]["field"] == "locale"
    assert "100%" in done.stderr  # the progress bar
    assert len(await all_questions(org)) == 3

    bundle = tmp_path / "org.zip"
    exported = await asyncio.to_thread(faq, "export", org.slug, str(bundle))
    assert exported.returncode == 0, exported.stderr
    copied = await asyncio.to_thread(faq, "import", other_org.slug, str(bundle), "--format", "faq")
    assert copied.returncode == 0, copied.stderr
    titles = sorted(q["title"] for q in await all_questions(other_org))
    assert titles == sorted(q["title"] for q in await all_questions(org))

    bad = tmp_path / "bad.json"
    bad.write_text("{")
    refused = await asyncio.to_thread(faq, "import", org.slug, str(bad), "--format", "zendesk")
    assert refused.returncode == 1 and "invalid JSON" in refused.stderr


async def test_faq_import_runs_as_batch_work(org: OrgClient, tmp_path: Path) -> None:
    """The command yields the CPU to the requests of every org: it runs at its converters'
    niceness (seen in /proc while it imports), and still imports everything."""
    import os
    import subprocess
    import sys
    import time

    from tenancy.priority import NICENESS

    assert (
        await asyncio.to_thread(faq, "orgs", "set-plan", org.slug, "ENTERPRISE")
    ).returncode == 0
    rows = ["title,answer,status"] + [f"Question {n},Answer {n},published" for n in range(3000)]
    upload = tmp_path / "many.csv"
    upload.write_text("\n".join(rows) + "\n")
    command = [
        sys.executable,
        "-m",
        "tasks.cli",
        "import",
        org.slug,
        str(upload),
        "--format",
        "csv",
    ]
    running = subprocess.Popen(
        command, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    seen: set[int] = set()
    while running.poll() is None:
        try:
            with open(f"/proc/{running.pid}/stat") as stat:
                seen.add(int(stat.read().rsplit(")", 1)[1].split()[16]))  # field 19: nice
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.02)
    assert running.returncode == 0
    assert own_niceness() + NICENESS in seen, seen
    assert json.loads(running.stdout.read() if running.stdout else b"")["counts"]["created"] == 3000


def own_niceness() -> int:
    import os

    return os.nice(0)
