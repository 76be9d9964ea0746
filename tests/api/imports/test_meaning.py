"""Imports that keep meaning (issue 41), from outside: a vendor's export in through
``POST /imports``, then read through the API: the report counts each kind of item apart, the
source's creation and update times are the resources' ``createdAt``/``updatedAt``, and links
between imported articles lead to their new help-center pages (a link whose article was not
imported is kept, and reported)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.imports.helpers import all_categories, all_questions, enable_locales, fixture, run
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow

ZENDESK = fixture("zendesk.json")
ZEROS = {"created": 0, "updated": 0, "unchanged": 0, "failed": 0}


def _counts(**kinds: dict[str, int]) -> dict[str, dict[str, int]]:
    return {
        kind: {**ZEROS, **kinds.get(kind, {})}
        for kind in ("categories", "questions", "translations", "settings")
    }


def by_title(items: list[dict[str, Any]], title: str) -> dict[str, Any]:
    return next(i for i in items if i.get("title", i.get("name")) == title)


# ---- counts by kind ---------------------------------------------------------------------------


async def test_the_report_counts_each_kind_apart(org: OrgClient, engine: AsyncEngine) -> None:
    job = await run(engine, org, "zendesk", ZENDESK)  # fr not enabled: its translations fail
    assert job["counts"] == {"created": 5, "updated": 0, "unchanged": 0, "failed": 2}, job
    assert job["countsByKind"] == _counts(
        categories={"created": 3}, questions={"created": 2}, translations={"failed": 2}
    ), job

    await enable_locales(org, "fr")
    again = await run(engine, org, "zendesk", ZENDESK)
    assert again["counts"] == {"created": 2, "updated": 0, "unchanged": 5, "failed": 0}
    assert again["countsByKind"] == _counts(
        categories={"unchanged": 3}, questions={"unchanged": 2}, translations={"created": 2}
    ), again
    r = await org.get(f"/imports/{again['id']}")
    assert (await r.get_json())["data"]["countsByKind"] == again["countsByKind"]


async def test_csv_counts_the_categories_it_makes_and_the_rows_it_fails(
    org: OrgClient, engine: AsyncEngine
) -> None:
    body = (
        b"title,answer,category,status,order,locale,externalId\n"
        b"Good,Fine,Account,published,1,,\n"
        b"Bad order,x,Account,draft,two,,\n"
        b"Sans id,y,,draft,1,fr,\n"
    )
    job = await run(engine, org, "csv", body)
    assert job["counts"] == {"created": 2, "updated": 0, "unchanged": 0, "failed": 2}, job
    assert job["countsByKind"] == _counts(
        categories={"created": 1},
        questions={"created": 1, "failed": 1},
        translations={"failed": 1},
    ), job


async def test_the_openapi_document_describes_counts_by_kind(org: OrgClient) -> None:
    r = await org.client.get("/openapi.json")
    schemas = (await r.get_json())["components"]["schemas"]
    job = schemas["ImportJobOut"]
    assert "countsByKind" in job["properties"] and "countsByKind" in job["required"]
    assert set(job["properties"]["counts"].get("$ref", "").split("/")[-1:]) == {"ImportCounts"}
    by_kind = schemas["ImportCountsByKind"]["properties"]
    assert set(by_kind) == {"categories", "questions", "translations", "settings"}
