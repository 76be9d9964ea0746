"""The response-cache key is built from the query as the view reads it, each name and value
encoded (issue 26): a crafted query whose decoded text spells another query
(``category=billing%26limit%3D50`` vs ``category=billing&limit=50``), or a path whose decoded
text holds a ``?``, gets its own entry, on the fast path (secret keys) and the Quart path
(publishable keys) alike, so no one can make a popular read serve another read's body."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from quart import Quart
from werkzeug.datastructures import MultiDict

from api.http.fast_path import CachedReads
from api.http.response_cache import ResponseCache, page_key, read_key
from tests.api.helpcenter.helpers import enable
from tests.api.helpcenter.helpers import question as hc_question
from tests.api.keys.helpers import as_key, make_public_key
from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient

HONEST = "/questions?q=password&category=billing&limit=50"
CRAFTED = "/questions?q=password&category=billing%26limit%3D50"

Read = Callable[[str], Awaitable[Any]]


def response_cache(app: Quart) -> ResponseCache:
    cache: ResponseCache | None = app.extensions["tenancy"].cache
    assert cache is not None and cache.enabled
    return cache


def fast(app: Quart) -> CachedReads:
    middleware = app.asgi_app
    assert isinstance(middleware, CachedReads)
    return middleware


async def answer(read: Read, path: str) -> tuple[int, bytes]:
    r = await read(path)
    return r.status_code, await r.get_data()


async def uncached(app: Quart, read: Read, path: str) -> tuple[int, bytes]:
    """What ``path`` answers with nothing in the cache (the cache is refilled by it)."""
    response_cache(app).clear()
    return await answer(read, path)


async def billing_question(org: OrgClient) -> dict[str, Any]:
    r = await org.post("/categories", json={"name": "Billing"})
    assert r.status_code == 201, await r.get_data()
    category = (await r.get_json())["data"]
    assert category["slug"] == "billing"
    return await create(
        org, category["id"], title="How do I reset my password?", status="published"
    )


async def poisoning_is_refused(app: Quart, org: OrgClient, read: Read) -> None:
    question = await billing_question(org)
    honest = await uncached(app, read, HONEST)
    assert honest[0] == 200
    assert [q["id"] for q in json.loads(honest[1])["data"]] == [question["id"]]
    crafted = await uncached(app, read, CRAFTED)
    assert crafted != honest
    # The crafted read first (its answer cached), then the honest one, twice (a hit).
    response_cache(app).clear()
    assert await answer(read, CRAFTED) == crafted
    assert await answer(read, HONEST) == honest
    assert await answer(read, HONEST) == honest
    # The honest read first, then the crafted one: never the honest answer.
    response_cache(app).clear()
    assert await answer(read, HONEST) == honest
    assert await answer(read, CRAFTED) == crafted
    assert await answer(read, CRAFTED) == crafted
    assert await answer(read, HONEST) == honest


async def test_a_crafted_query_cannot_poison_a_secret_keys_read(app: Quart, org: OrgClient) -> None:
    served = fast(app).served

    async def read(path: str) -> Any:
        return await org.get(path, scope="read")

    await poisoning_is_refused(app, org, read)
    assert fast(app).served > served, "the fast path answered none of the repeated reads"


async def test_a_crafted_query_cannot_poison_a_publishable_keys_read(
    app: Quart, org: OrgClient
) -> None:
    key = (await make_public_key(org))["key"]

    async def read(path: str) -> Any:
        return await as_key(org, key, "GET", path)

    hits = response_cache(app).hits
    await poisoning_is_refused(app, org, read)
    assert response_cache(app).hits > hits, "the cache served none of the repeated reads"


async def test_a_question_mark_in_the_path_is_not_the_query(app: Quart, org: OrgClient) -> None:
    """``/questions/{slug}?x?`` (the question, an ignored parameter) and
    ``/questions/{slug}%3Fx`` (no such question) once shared the text ``…/{slug}?x?``."""
    question = await create(org, status="published")
    slug = question["slug"]
    key = (await make_public_key(org))["key"]
    readers: list[Read] = [
        lambda path: org.get(path, scope="read"),
        lambda path: as_key(org, key, "GET", path),
    ]
    for read in readers:
        response_cache(app).clear()
        r = await read(f"/questions/{slug}?x?")
        assert r.status_code == 200, await r.get_data()
        r = await read(f"/questions/{slug}%3Fx")
        assert r.status_code == 404, await r.get_data()
        assert (await r.get_json())["error"]["code"] == "question_not_found"


def key_of(path: str, raw_query: str, locale: str = "en") -> tuple[str, str]:
    """The cache key of ``path?raw_query`` as the two paths compute it."""
    args = MultiDict(parse_qsl(raw_query, keep_blank_values=True))
    return read_key(path, args.items(multi=True), locale)


def test_the_key_encodes_names_and_values() -> None:
    base = "/api/v1/acme/questions"
    requests = [
        (base, "q=password&category=billing&limit=50"),
        (base, "q=password&category=billing%26limit%3D50"),
        (base, "q=password&category=billing%00&limit=50"),
        (base, "q=password&category%3Dbilling%26limit=50"),
        (base, "category=billing&limit=50"),
        (base, "category=billing%26limit%3D50"),
        (f"{base}/a", "x?"),
        (f"{base}/a?x", ""),
    ]
    keys = {key_of(path, raw)[0] for path, raw in requests}
    assert len(keys) == len(requests)
    # One read as the view reads it shares its entry: searches spelled in another order, or
    # encoded otherwise.
    assert key_of(base, "limit=5&q=Pass&status=published") == (
        key_of(base, "status=published&q=Pass&limit=5")
    )
    assert key_of(base, "category=b%69lling&limit=5") == key_of(base, "category=billing&limit=5")
    assert key_of(base, "limit=5", "fr") != key_of(base, "limit=5", "en")


def test_a_help_center_page_key_encodes_the_path_and_the_query() -> None:
    """For ``api/helpcenter/routes.py: cached_page``, whose key was the request's text
    (``full_path``): ``/questions/a%3Fx`` served the page cached for ``/questions/a?x?``."""

    def key(site: str, path: str, raw_query: str) -> str:
        return page_key(
            site, path, MultiDict(parse_qsl(raw_query, keep_blank_values=True)).items(multi=True)
        )

    site, base = "https://faq.example", "/hc/acme/en"
    keys = {
        key(site, f"{base}/questions/a", "x?"),
        key(site, f"{base}/questions/a?x", ""),
        key(site, f"{base}/search", "q=a%26b%3Dc"),
        key(site, f"{base}/search", "q=a&b=c"),
        key("https://faq.example/hc", "/acme/en/search", "q=a"),
        key(site, f"{base}/search", "q=a"),
    }
    assert len(keys) == 6
    # A search page shows q as typed: spellings are never shared.
    assert key(site, f"{base}/search", "q=A") != key(site, f"{base}/search", "q=a")
    assert key(site, f"{base}/search", "q=a%20b") == key(site, f"{base}/search", "q=a+b")


def test_entries_with_long_queries_stay_within_the_budget() -> None:
    """A key is a fixed-size digest and each entry's bookkeeping counts against the budget,
    so tiny bodies under long queries cannot hold many times the cache's size."""
    budget = 256 << 10
    cache = ResponseCache(budget, 300)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(10_000):
            query = [("x" * 8000, str(i))]
            key, variant = read_key("/api/v1/acme/questions/q", query, "en")
            cache.put("t_schema", key, b"g1", b"{}", variant)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 2 * budget, f"{held} bytes held by a cache of {budget}"


async def test_a_question_mark_in_a_help_center_path_is_not_the_query(org: OrgClient) -> None:
    """The help center's page cache: ``/questions/a%3Fx`` is no question of the org (404),
    even after ``/questions/a?x?`` (the page of ``a``) was cached."""
    await enable(org)
    q = await hc_question(org, "Cached under a question mark?", "Yes.")
    base = f"/hc/{org.slug}/en/questions/{q['slug']}"
    r = await org.client.get(f"{base}?x?")
    assert r.status_code == 200
    r = await org.client.get(f"{base}%3Fx")
    assert r.status_code == 404
