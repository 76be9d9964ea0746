"""What ``llms.txt`` and ``llms-full.txt`` of a large help center cost the process every tenant
shares (issue 31), on a real ``faq serve``: 4,000 published questions whose answers hold
6,000 characters each (24 MB of Markdown): each file stops at its bound (``MAX_FULL_BYTES``,
``MAX_LLMS_BYTES``) with a line saying so and pointing to the sitemap, the peak
resident memory stays under ``RSS_CEILING_MB`` and a cheap request sent meanwhile is answered
within ``CHEAP_LATENCY_BOUND_MS``."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter import llms
from billing.plans import Plan
from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.api.helpcenter.helpers import enable
from tests.conftest import OrgFactory
from tests.fixtures.bounded import api_process, fetch
from tests.reliability.test_memory_helpcenter import assert_bounded, report

pytestmark = pytest.mark.serial

COUNT = 4_000
_LONG_ANSWERS = """
INSERT INTO questions (id, slug, locale, title, answer, status, category_id, sort_order,
                       published_at, search_vector, created_at, updated_at)
SELECT 'q_' || :prefix || lpad(i::text, 7, '0'), 'long-answer-' || i, 'en',
       'How does feature ' || i || ' work?', repeat('Some **Markdown** words. ', 250),
       'published', :category, i, now(), ''::tsvector, now(), now()
FROM generate_series(1, :count) AS i
"""
# The category as a parameter, not a subquery: Citus 13.2 deparses an INSERT ... SELECT into a
# distributed schema's table with one into invalid SQL (docs/scaling.md, test-only).
_DEFAULT_CATEGORY = "SELECT id FROM categories WHERE is_default AND deleted_at IS NULL"


async def test_the_files_of_a_large_help_center_are_bounded(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await org_factory(Plan.PRO)
    await enable(org)
    prefix = re.sub(r"[^a-z0-9]", "", org.slug)[-12:].upper()
    async with tenant_session(engine, org.info.schema_name) as session:
        category = (await session.execute(text(_DEFAULT_CATEGORY))).scalar_one()
        await session.execute(
            text(_LONG_ANSWERS), {"prefix": prefix, "count": COUNT, "category": category}
        )
        await commit(session)
    with api_process() as api:
        root = f"{api.base_url}/hc/{org.slug}"
        seen = api.observe(lambda: fetch(f"{root}/llms-full.txt"))
        status, headers, body = seen.result
        report("llms-full.txt", seen, bytes=len(body), questions=body.count(b"\n## "))
        assert status == 200
        assert {k.lower(): v for k, v in headers.items()}["content-type"] == llms.TEXT
        assert len(body) <= llms.MAX_FULL_BYTES
        assert body.decode().rstrip().endswith(f"every question is in {root}/sitemap.xml.)")
        assert_bounded(seen)

        seen = api.observe(lambda: fetch(f"{root}/llms.txt"))
        status, _, body = seen.result
        report("llms.txt", seen, bytes=len(body), questions=body.count(b"\n- ["))
        assert status == 200 and len(body) <= llms.MAX_LLMS_BYTES
        assert 1_000 < body.count(b"\n- [") < COUNT  # as many as fit, one line each
        assert body.decode().rstrip().endswith(f"every question is in {root}/sitemap.xml.)")
        assert_bounded(seen)
