"""The help center's sitemap as pages (issue 26): ``sitemap.xml`` is a sitemap index
(sitemaps.org) of pages ``sitemaps/{n}.xml``, each at most 50,000 URLs and 50 MB, so no
request builds the whole sitemap; every URL of every enabled locale is in exactly one page,
with its ``hreflang`` alternates; pages are cached and follow writes like the other pages.

An ENTERPRISE org at the locale cap (100) has the largest URLs: two questions a page."""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

from api.helpcenter import sitemaps
from billing.plans import Plan
from tests.api.helpcenter.helpers import enable, question, set_locales
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient
from tests.reliability.test_memory_helpcenter import many_locales

NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9", "x": "http://www.w3.org/1999/xhtml"}


async def xml_of(org: OrgClient, url: str) -> tuple[int, Any, bytes]:
    r = await org.client.get(url.removeprefix("http://localhost"))
    return r.status_code, r.headers, await r.get_data()


async def read_all(org: OrgClient) -> tuple[list[str], Counter[str], dict[str, set[Any]]]:
    status, headers, body = await xml_of(org, f"/hc/{org.slug}/sitemap.xml")
    assert status == 200 and headers["Content-Type"].startswith("application/xml")
    index = ET.fromstring(body)
    assert index.tag == "{http://www.sitemaps.org/schemas/sitemap/0.9}sitemapindex"
    pages = [loc.text or "" for loc in index.findall("s:sitemap/s:loc", NS)]
    seen: Counter[str] = Counter()
    links: dict[str, set[Any]] = {}
    for page in pages:
        status, headers, body = await xml_of(org, page)
        assert status == 200 and headers["Content-Type"].startswith("application/xml"), page
        assert len(body) <= sitemaps.PAGE_BYTES
        urlset = ET.fromstring(body)
        assert len(urlset.findall("s:url", NS)) <= sitemaps.MAX_URLS
        for url in urlset.findall("s:url", NS):
            loc = url.findtext("s:loc", namespaces=NS) or ""
            seen[loc] += 1
            assert url.findtext("s:lastmod", namespaces=NS), loc
            links[loc] = {(a.get("hreflang"), a.get("href")) for a in url.findall("x:link", NS)}
    return pages, seen, links


def want_links(base: str, slug: str, locales: list[str]) -> set[Any]:
    want = {(t, f"{base}/{t}/questions/{slug}") for t in locales}
    return want | {("x-default", f"{base}/{locales[0]}/questions/{slug}")}


async def test_the_sitemap_is_an_index_of_pages_each_url_once(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.ENTERPRISE)
    locales = many_locales(100)
    await enable(org)
    await set_locales(org, locales)
    published = [await question(org, f"Indexed question {i}", "Yes.") for i in range(5)]
    draft = await question(org, "A draft", "No.", status="draft")
    pages, seen, links = await read_all(org)
    base = f"http://localhost/hc/{org.slug}"
    per_page = sitemaps.questions_per_page(locales, base)
    assert per_page == 2  # 100 locales: 101 alternates on each of a question's 100 URLs
    assert pages == [f"{base}/sitemaps/{n}.xml" for n in (1, 2, 3)]
    assert len(seen) == 5 * 100 and set(seen.values()) == {1}  # every URL in one page
    for q in published:
        for tag in locales:
            loc = f"{base}/{tag}/questions/{q['slug']}"
            assert loc in seen
            assert links[loc] == want_links(base, q["slug"], locales)
    assert not [loc for loc in seen if draft["slug"] in loc]
    # Past the last page, page 0, and a number too large for the index: 404 pages.
    for n in ("4", "0", "50001", "99999999999999999999"):
        status, headers, _ = await xml_of(org, f"/hc/{org.slug}/sitemaps/{n}.xml")
        assert status == 404 and headers["Content-Type"].startswith("text/html"), n
    # robots.txt still points at sitemap.xml, now the index.
    r = await org.client.get(f"/hc/{org.slug}/robots.txt")
    assert f"Sitemap: {base}/sitemap.xml" in (await r.get_data()).decode()


async def test_sitemap_pages_are_cached_and_follow_writes(org: OrgClient, app: Any) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr"])
    first = await question(org, "First in the sitemap", "Yes.")
    cache = app.extensions["tenancy"].cache
    pages, seen, _ = await read_all(org)
    assert len(pages) == 1 and len(seen) == 2
    hits = cache.hits
    assert (await read_all(org))[1] == seen
    assert cache.hits == hits + 2  # the index and its page, from the cache
    second = await question(org, "Second in the sitemap", "Yes.")
    r = await org.patch(f"/questions/{first['id']}", json={"status": "archived"}, scope="write")
    assert r.status_code == 200
    _, seen, _ = await read_all(org)
    base = f"http://localhost/hc/{org.slug}"
    assert set(seen) == {f"{base}/{t}/questions/{second['slug']}" for t in ("en", "fr")}


async def test_nothing_published_is_an_empty_index(org: OrgClient) -> None:
    await enable(org)
    await question(org, "Only a draft", "No.", status="draft")
    pages, seen, _ = await read_all(org)
    assert pages == [] and not seen
    status, _, _ = await xml_of(org, f"/hc/{org.slug}/sitemaps/1.xml")
    assert status == 404


async def test_an_overlong_host_gets_no_sitemap(org: OrgClient) -> None:
    await enable(org)
    await question(org, "Any", "Yes.")
    host = ".".join(["h" * 60] * 7)  # labels a resolver would take, 426 characters
    for path in ("/sitemap.xml", "/sitemaps/1.xml"):
        r = await org.client.get(f"/hc/{org.slug}{path}", headers={"Host": host})
        assert r.status_code == 404, path
    r = await org.client.get(f"/hc/{org.slug}/sitemap.xml", headers={"Host": "faq.example.com"})
    assert r.status_code == 200


async def test_sitemaps_are_sent_compressed_to_clients_that_take_gzip(org: OrgClient) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr"])
    for i in range(3):
        await question(org, f"Compressed {i}", "Yes.")
    for path in ("/sitemap.xml", "/sitemaps/1.xml"):
        url = f"/hc/{org.slug}{path}"
        for _ in range(2):  # built, then from the cache
            plain = await org.client.get(url)
            packed = await org.client.get(url, headers={"Accept-Encoding": "gzip, br"})
            assert "Content-Encoding" not in plain.headers, path
            assert packed.headers["Content-Encoding"] == "gzip", path
            assert packed.headers["Vary"] == plain.headers["Vary"] == "Accept-Encoding"
            body = await plain.get_data()
            assert gzip.decompress(await packed.get_data()) == body, path
            assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>'), path
        refused = await org.client.get(url, headers={"Accept-Encoding": "gzip;q=0"})
        assert "Content-Encoding" not in refused.headers and await refused.get_data() == body
