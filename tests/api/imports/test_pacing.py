"""An import shares PostgreSQL with every org: after each batch's transaction it pauses for a
share (``PACE``) of the time the batch took, so other orgs' reads get the server between its
batches (``docs/import-export.md``)."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.imports import run as runs
from billing.plans import Plan
from tests.api.imports.helpers import all_questions, run
from tests.conftest import OrgFactory

CSV_ROWS = runs.BATCH_ITEMS * 2 + 7


async def test_each_batch_is_followed_by_a_pause_in_proportion(
    org_factory: OrgFactory, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await org_factory(plan=Plan.ENTERPRISE)
    slept: list[float] = []
    took: list[float] = []
    real_pause = runs.pause

    async def pause(seconds: float) -> None:
        took.append(seconds)
        slept.append(runs.PACE * seconds)
        await real_pause(seconds)

    monkeypatch.setattr(runs, "pause", pause)
    rows = ["title,answer,status"] + [f"Q {n},A {n},published" for n in range(CSV_ROWS)]
    job = await run(engine, org, "csv", ("\n".join(rows) + "\n").encode())
    assert job["status"] == "succeeded", job
    assert job["counts"]["created"] == CSV_ROWS
    assert len(await all_questions(org)) == 100  # the first page
    assert len(took) == 3 and all(t > 0 for t in took)  # 200 + 200 + 7 items
    assert 0 < runs.PACE < 1 and sum(slept) < sum(took)
