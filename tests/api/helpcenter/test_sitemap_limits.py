"""The bounds a sitemap page keeps (issue 26): at most 50,000 URLs and ``PAGE_BYTES`` (under the
sitemaps.org 50 MB and the response cache's largest entry) whatever the locales, the tags, the
slugs and the host; and the plans cap enabled locales (ENTERPRISE: 100), so a URL's alternates
are bounded too."""

from __future__ import annotations

from datetime import UTC, datetime
from xml.sax.saxutils import escape

import pytest

from api.helpcenter import sitemaps
from api.locales import MAX_TAG_LENGTH
from api.questions.schemas import SLUG_MAX
from billing.plans import Plan, cap_of
from tests.conftest import OrgFactory
from tests.reliability.test_memory_helpcenter import many_locales

CACHE_ENTRY_MAX = 128 * 2**20 // 8  # api/http/response_cache.py: an entry is at most 1/8 of it


@pytest.mark.parametrize("count", [1, 2, 5, 20, 100])
@pytest.mark.parametrize("root_length", [30, sitemaps.MAX_ROOT])
def test_a_full_page_at_the_longest_slugs_and_tags_stays_in_bounds(
    count: int, root_length: int
) -> None:
    # Tags as long as a tag may be (35: language-Script-REGION at most), all distinct.
    locales = [f"{i:03d}".ljust(MAX_TAG_LENGTH, "x") for i in range(count)]
    root = escape("http://" + "h" * root_length)[:root_length]
    per_page = sitemaps.questions_per_page(locales, root)
    assert per_page * count <= sitemaps.MAX_URLS
    entries = [("s" * (SLUG_MAX - 6) + f"{i:06d}", datetime.now(UTC)) for i in range(per_page)]
    page = (
        sitemaps.URLSET_HEAD.encode()
        + sitemaps.urls_xml(root, locales, locales[0], entries)
        + sitemaps.URLSET_TAIL.encode()
    )
    assert len(page) <= sitemaps.PAGE_BYTES <= min(50 * 2**20, CACHE_ENTRY_MAX)
    # Not wasteful either: one more question would not have fitted (or the URL cap decided).
    one_more = len(sitemaps.urls_xml(root, locales, locales[0], entries[:1]))
    assert len(page) + one_more > sitemaps.PAGE_BYTES or (per_page + 1) * count > 50_000


def test_the_index_lists_at_most_50000_pages() -> None:
    assert sitemaps.page_count(0, 10) == 0
    assert sitemaps.page_count(21, 10) == 3
    assert sitemaps.page_count(10**9, 1) == sitemaps.MAX_SITEMAPS == 50_000


def test_every_plan_caps_its_locales() -> None:
    caps = {plan: cap_of(plan, "locales") for plan in Plan}
    assert caps == {Plan.FREE: 2, Plan.STARTER: 5, Plan.PRO: 20, Plan.ENTERPRISE: 100}


async def test_an_enterprise_org_enables_at_most_100_locales(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.ENTERPRISE)
    tags = many_locales(101)
    r = await org.patch("/settings", json={"locales": tags})
    assert r.status_code == 402, await r.get_json()
    body = await r.get_json()
    assert body["error"]["code"] == "plan_limit_reached"
    assert body["error"]["details"] == [{"field": "locales", "issue": "at most 100 locales"}]
    assert (await (await org.get("/settings")).get_json())["data"]["locales"] == ["en"]
    r = await org.patch("/settings", json={"locales": tags[:100]})
    assert r.status_code == 200, await r.get_json()
    assert len((await r.get_json())["data"]["locales"]) == 100
    billing = (await (await org.get("/billing", scope="read")).get_json())["data"]
    assert billing["caps"]["locales"] == 100
