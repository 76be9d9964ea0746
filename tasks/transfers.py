"""Imports and exports as jobs: ``imports.run`` reads a stored upload into the org,
``exports.run`` builds an org's bundle (``api/imports/run.py``, ``api/exports/build.py``)."""

from __future__ import annotations

from api.exports.build import run_export
from api.imports.run import run_import
from tasks.db import worker_engine
from tasks.registry import actor

# An import of 10,000 articles takes about a minute; the limit leaves room for 100 MB.
TIME_LIMIT_MS = 3_600_000


@actor("imports.run", max_retries=0, time_limit=TIME_LIMIT_MS)
async def run_import_actor(org_id: str, import_id: str) -> None:
    await run_import(worker_engine(), org_id, import_id)


@actor("exports.run", max_retries=0, time_limit=TIME_LIMIT_MS)
async def run_export_actor(org_id: str, export_id: str) -> None:
    await run_export(worker_engine(), org_id, export_id)
