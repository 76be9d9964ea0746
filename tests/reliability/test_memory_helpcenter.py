"""What the help center's worst anonymous requests cost the process every tenant shares (issue
26), measured on a real ``faq serve`` (``tests/fixtures/bounded.py``): its peak resident memory
stays under ``RSS_CEILING_MB`` and a cheap request sent meanwhile is answered within
``CHEAP_LATENCY_BOUND_MS``.

- The largest sitemap: a FREE org at its caps (200 questions, 2 locales), a PRO org with 5,000
  published questions in 20 locales, and an ENTERPRISE org at the locale cap (100) with slugs
  of the longest length; the index and every page are fetched, and every URL of every locale
  is in exactly one page with all its ``hreflang`` alternates.
- The most expensive answer to render: 100,000 characters of the Markdown that markdown-it +
  nh3 take longest on (measured: ``![`` repeated, quadratic in markdown-it's link parsing) and
  of the one whose HTML is largest (nested list items), on their question pages.

Content is made by PostgreSQL itself (``INSERT … SELECT generate_series``), as a plan allows it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.locales import canonical_tag
from billing.plans import Plan
from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.api.helpcenter.helpers import enable, set_locales
from tests.conftest import OrgFactory
from tests.fixtures.bounded import (
    CHEAP_LATENCY_BOUND_MS,
    RSS_CEILING_MB,
    ApiProcess,
    Observation,
    api_process,
    fetch,
)
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.serial

SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"
MAX_URLS = 50_000  # sitemaps.org: per page
MAX_PAGE_BYTES = 50 * 2**20  # sitemaps.org: per page, uncompressed
ANSWER_CHARS = 100_000  # the API's limit on an answer

_PUBLISHED = """
INSERT INTO questions (id, slug, locale, title, answer, status, category_id, sort_order,
                       published_at, search_vector, created_at, updated_at)
SELECT 'q_' || :prefix || lpad(i::text, 7, '0'),
       left(:slug || '-' || i, 200 - length(i::text) - 1) || '-' || i, 'en', 'Question ' || i,
       'Answer.', 'published', (SELECT id FROM categories WHERE is_default AND deleted_at IS NULL),
       i, now(), ''::tsvector, now(), now()
FROM generate_series(1, :count) AS i
"""
TYPICAL_SLUG = "how-do-i-change-the-billing-address-on-my-invoices"  # 50 characters
LONGEST_SLUG = "a-very-long-question-slug-" * 8  # cut to 200 characters with its number


def hostile(unit: str) -> str:
    return (unit * (ANSWER_CHARS // len(unit) + 1))[:ANSWER_CHARS]


# Measured with render.markdown_html + render.sanitise on 100,000 characters (one core):
# "![" 5-9 s (the slowest of ~30 shapes tried: emphasis runs 2.2-2.7 s, tables 1.8-4.3 s,
# brackets 4.2 s, headings 2.3-3.3 s); "- - - - - - - - a" 2-8 s and ~920 KB of HTML (the
# largest: 9x the source).
SLOWEST_ANSWER = hostile("![")
LARGEST_ANSWER = hostile("- - - - - - - - a\n")


def many_locales(count: int) -> list[str]:
    """``count`` CLDR tags in canonical case, ``en`` first."""
    from babel.localedata import locale_identifiers

    tags = sorted(
        {t for t in (i.replace("_", "-") for i in locale_identifiers()) if canonical_tag(t) == t}
        - {"en"}
    )
    return ["en", *tags[: count - 1]]


async def seed_published(
    engine: AsyncEngine, org: OrgClient, count: int, slug: str = TYPICAL_SLUG
) -> None:
    prefix = re.sub(r"[^a-z0-9]", "", org.slug)[-12:]
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(text(_PUBLISHED), {"prefix": prefix, "count": count, "slug": slug})
        await commit(session)


def url_elements(body: bytes) -> Iterator[ET.Element]:
    """The ``<url>`` elements of a page, parsed as they come (cleared once read)."""
    parser = ET.XMLPullParser(events=("end",))
    for start in range(0, len(body), 65_536):
        parser.feed(body[start : start + 65_536])
        for _, element in parser.read_events():
            if element.tag == f"{SITEMAP}url":
                yield element
                element.clear()
    parser.close()


def fetch_sitemap(api: ApiProcess, slug: str) -> dict[str, Any]:
    """The index and every page it lists, as a client that does not take gzip reads them
    (the server's costlier path), kept compressed here: the work of this client while
    ``observe`` measures stays in zlib (which lets go of the GIL), so the prober thread in
    this process measures the server, not this process's own XML parsing."""
    url = f"{api.base_url}/hc/{slug}/sitemap.xml"
    status, headers, body = fetch(url)
    assert status == 200, body[:300]
    assert "xml" in {k.lower(): v for k, v in headers.items()}["content-type"]
    # Before issue 26, sitemap.xml was one page of everything: read it as such (the figures).
    is_index = b"<sitemapindex" in body[:500]
    pages = [e.text or "" for e in ET.fromstring(body).iter(f"{SITEMAP}loc")] if is_index else []
    bodies = [] if pages else [(len(body), zlib.compress(body, 1))]
    del body
    for page in pages:
        status, _, body = fetch(page)
        assert status == 200, (page, body[:300])
        bodies.append((len(body), zlib.compress(body, 1)))
        del body
    return {"index": is_index, "pages": len(pages), "bodies": bodies}


def read_sitemap(fetched: dict[str, Any]) -> dict[str, Any]:
    """What the pages hold: how many times each URL is there, its alternates, the largest
    page and the most URLs in one."""
    seen: Counter[str] = Counter()
    alternates_of: dict[str, frozenset[tuple[str, str]]] = {}
    urls_max = 0
    for _, packed in fetched["bodies"]:
        count = 0
        for element in url_elements(zlib.decompress(packed)):
            count += 1
            loc = element.findtext(f"{SITEMAP}loc") or ""
            seen[loc] += 1
            alternates_of[loc] = frozenset(
                (link.get("hreflang") or "", link.get("href") or "")
                for link in element.findall(f"{XHTML}link")
            )
        urls_max = max(urls_max, count)
    return {
        **fetched,
        "seen": seen,
        "alternates": alternates_of,
        "largest": max(size for size, _ in fetched["bodies"]),
        "urls_max": urls_max,
    }


def check_sitemap(
    found: dict[str, Any], api: ApiProcess, slug: str, locales: list[str], count: int
) -> None:
    assert found["index"], "sitemap.xml is not a sitemap index"
    seen: Counter[str] = found["seen"]
    assert len(seen) == count * len(locales)
    assert set(seen.values()) == {1}, "a URL is in more than one page"
    assert found["urls_max"] <= MAX_URLS and found["largest"] <= MAX_PAGE_BYTES
    root = f"{api.base_url}/hc/{slug}"
    by_question: dict[str, set[str]] = {}
    for loc in seen:
        locale, _, question = loc.removeprefix(root + "/").partition("/questions/")
        by_question.setdefault(question, set()).add(locale)
    assert len(by_question) == count
    assert all(tags == set(locales) for tags in by_question.values())
    for loc, links in found["alternates"].items():
        question = loc.partition("/questions/")[2]
        want = {(t, f"{root}/{t}/questions/{question}") for t in locales}
        want.add(("x-default", f"{root}/{locales[0]}/questions/{question}"))
        assert links == want, loc


def report(name: str, seen: Observation, **figures: Any) -> None:
    extra = " ".join(f"{k}={v}" for k, v in figures.items())
    print(
        f"\n[{name}] before={seen.before_rss_mb:.0f} MB peak={seen.peak_rss_mb:.0f} MB "
        f"cheap_max={seen.cheap_max_ms:.0f} ms over {seen.cheap_count} {extra}"
    )


def assert_bounded(seen: Observation) -> None:
    assert seen.peak_rss_mb < RSS_CEILING_MB, seen
    assert seen.cheap_max_ms < CHEAP_LATENCY_BOUND_MS, seen
    assert seen.cheap_count > 0, seen


async def sitemap_org(
    org_factory: OrgFactory,
    engine: AsyncEngine,
    plan: Plan,
    locales: list[str],
    count: int,
    slug: str = TYPICAL_SLUG,
) -> OrgClient:
    org = await org_factory(plan)
    await enable(org)
    await set_locales(org, locales)
    await seed_published(engine, org, count, slug)
    return org


async def test_the_largest_sitemap_of_a_free_org_is_bounded(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    locales = ["en", "fr"]
    org = await sitemap_org(org_factory, engine, Plan.FREE, locales, 200, LONGEST_SLUG)
    with api_process() as api:
        seen = api.observe(lambda: fetch_sitemap(api, org.slug))
        found = read_sitemap(seen.result)
        report("sitemap FREE 200x2", seen, pages=found["pages"], largest=found["largest"])
        check_sitemap(found, api, org.slug, locales, 200)
        assert_bounded(seen)


async def test_a_sitemap_of_5000_questions_in_20_locales_is_paged_and_bounded(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    locales = many_locales(20)
    org = await sitemap_org(org_factory, engine, Plan.PRO, locales, 5_000)
    with api_process() as api:
        seen = api.observe(lambda: fetch_sitemap(api, org.slug))
        found = read_sitemap(seen.result)
        report("sitemap PRO 5000x20", seen, pages=found["pages"], largest=found["largest"])
        check_sitemap(found, api, org.slug, locales, 5_000)
        assert_bounded(seen)
        # Again, from the cache: the same pages, no more memory.
        again = api.observe(lambda: fetch_sitemap(api, org.slug))
        report("sitemap PRO 5000x20 cached", again)
        assert read_sitemap(again.result)["seen"] == found["seen"]
        assert_bounded(again)


async def test_a_sitemap_at_the_locale_cap_with_the_longest_slugs_is_bounded(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    locales = many_locales(100)
    org = await sitemap_org(org_factory, engine, Plan.ENTERPRISE, locales, 150, LONGEST_SLUG)
    with api_process() as api:
        seen = api.observe(lambda: fetch_sitemap(api, org.slug))
        found = read_sitemap(seen.result)
        report("sitemap ENTERPRISE 150x100", seen, pages=found["pages"], largest=found["largest"])
        check_sitemap(found, api, org.slug, locales, 150)
        assert_bounded(seen)


async def test_the_most_expensive_answers_render_off_the_event_loop_in_bounded_memory(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.FREE)
    await enable(org)
    from tests.api.helpcenter.helpers import question

    slowest = await question(org, "Slowest answer", SLOWEST_ANSWER)
    largest = await question(org, "Largest answer", LARGEST_ANSWER)
    observed: list[Observation] = []
    with api_process() as api:
        for name, q in (("slowest", slowest), ("largest", largest)):
            url = f"{api.base_url}/hc/{org.slug}/en/questions/{q['slug']}"
            seen = api.observe(lambda url=url: fetch(url, timeout=300))
            status, _, body = seen.result
            report(f"answer {name}", seen, html=len(body))
            assert status == 200, body[:300]
            observed.append(seen)
    for seen in observed:
        assert_bounded(seen)
