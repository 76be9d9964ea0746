"""``faq import`` and ``faq export``, run as ops run them: the same code as the API, in the
command's own process, with a progress bar and the report as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.api.imports.helpers import FIXTURES, all_questions
from tests.fixtures.orgs import OrgClient
from tests.test_cli import faq


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
