"""Cache hits answered before Quart (``api.http.fast_path``, issue 14): the same status, body and
headers as the Quart path, the same rules (key, scope, org, rate limit counted once, locale,
read-your-writes), and everything it does not serve left to Quart unchanged."""

from __future__ import annotations

import re
from typing import Any

from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from api.http.fast_path import CachedReads
from tests.api.keys.helpers import SITE, as_key, make_key, make_public_key
from tests.api.questions.helpers import create
from tests.api.translations.test_reading import enable_locales, translate
from tests.fixtures.directory import settled
from tests.fixtures.orgs import OrgClient

# Headers that differ between two answers of one read by design.
PER_REQUEST = {"x-request-id", "ratelimit-remaining", "ratelimit-reset", "date"}


def fast(app: Quart) -> CachedReads:
    middleware = app.asgi_app
    assert isinstance(middleware, CachedReads)
    return middleware


def comparable(response: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in response.headers.items() if k.lower() not in PER_REQUEST}


async def through_quart(app: Quart, org: OrgClient, path: str, **kw: Any) -> Any:
    """GET ``path`` as the read key with the fast path out of the way: Quart's answer (it
    fills the cache as a miss does)."""
    middleware = fast(app)
    app.asgi_app = middleware.inner  # type: ignore[method-assign]
    try:
        return await org.get(path, scope="read", **kw)
    finally:
        app.asgi_app = middleware  # type: ignore[method-assign]


async def twice(app: Quart, org: OrgClient, path: str, **kw: Any) -> tuple[Any, Any]:
    """GET ``path`` twice as the read key: the first through Quart (a miss that fills the
    cache), the second answered by the fast path (a hit). The directory settles first: a
    NOTIFY of the org fixture's key creations arriving between the two would drop the key the
    fast path resolves, and the second would go to Quart (seen once under a loaded CI run)."""
    await settled(app, app.extensions["tenancy"].engine)
    first = await through_quart(app, org, path, **kw)
    assert first.status_code == 200, await first.get_data()
    served = fast(app).served
    second = await org.get(path, scope="read", **kw)
    assert fast(app).served == served + 1, f"{path} was not answered by the fast path"
    return first, second


async def test_a_hit_answers_what_quart_answered(app: Quart, org: OrgClient) -> None:
    q = await create(org, title="Where is my parcel?", status="published")
    for path in (
        "/questions?limit=20",
        f"/questions/{q['slug']}",
        f"/questions/{q['id']}",
        "/categories",
        f"/categories/{q['categoryId']}",
    ):
        first, second = await twice(app, org, path)
        assert second.status_code == 200
        assert await second.get_data() == await first.get_data()
        assert comparable(second) == comparable(first)
        assert second.headers["Content-Type"] == "application/json"
        assert int(second.headers["Content-Length"]) == len(await second.get_data())
        assert int(second.headers["RateLimit-Remaining"]) == (
            int(first.headers["RateLimit-Remaining"]) - 1
        )
        assert re.fullmatch(r"[0-9a-f]{32}", second.headers["X-Request-Id"])
        assert second.headers["X-Request-Id"] != first.headers["X-Request-Id"]


async def test_a_hit_keeps_the_locale_and_its_headers(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    q = await create(org, title="How do I pay?", answer="With a card.", status="published")
    await translate(
        org,
        "questions",
        q["id"],
        "fr",
        title="Comment payer ?",
        answer="Par carte.",
        status="published",
    )
    path = f"/questions/{q['id']}"
    first, second = await twice(app, org, path, headers={"Accept-Language": "fr-CH, en;q=0.5"})
    assert (await second.get_json())["data"]["title"] == "Comment payer ?"
    assert second.headers["Content-Language"] == "fr"
    assert "Accept-Language" in second.headers["Vary"]
    assert comparable(second) == comparable(first)
    # Another language is another entry: never the French body (read from PostgreSQL here).
    r = await org.get(path, scope="read", headers={"Accept-Language": "en"})
    assert (await r.get_json())["data"]["title"] == "How do I pay?"
    assert r.headers["Content-Language"] == "en"
    # ?locale= does not vary on the header.
    first, second = await twice(app, org, path, query={"locale": "fr"})
    assert "Vary" not in second.headers and "Vary" not in first.headers
    # A locale the org does not serve is Quart's 400, hit or not.
    r = await org.get(path, scope="read", query={"locale": "de"})
    assert r.status_code == 400
    assert (await r.get_json())["error"]["details"][0]["field"] == "locale"


async def test_a_write_is_read_at_once_through_the_fast_path(app: Quart, org: OrgClient) -> None:
    q = await create(org, title="Old title", status="published")
    await twice(app, org, f"/questions/{q['id']}")
    _, last = await twice(app, org, "/questions")
    remaining = int(last.headers["RateLimit-Remaining"])
    r = await org.patch(f"/questions/{q['id']}", json={"title": "New title"}, scope="write")
    assert r.status_code == 200
    # The old entries' generation is gone: the single read is read from PostgreSQL by the
    # fast path, the list by Quart (handed over with its count: counted once, not twice).
    for path, by_fast_path in ((f"/questions/{q['id']}", 1), ("/questions", 0)):
        served = fast(app).served
        r = await org.get(path, scope="read")
        body = await r.get_json()
        title = body["data"]["title"] if "id" in body["data"] else body["data"][0]["title"]
        assert title == "New title"
        assert fast(app).served == served + by_fast_path
        remaining -= 1
        assert int(r.headers["RateLimit-Remaining"]) == remaining


async def test_the_request_id_and_the_access_metrics(
    app: Quart, client: Any, org: OrgClient
) -> None:
    await twice(app, org, "/categories")
    served = fast(app).served
    r = await org.get("/categories", scope="read", headers={"X-Request-Id": "trace-fast-1"})
    assert fast(app).served == served + 1
    assert r.headers["X-Request-Id"] == "trace-fast-1"
    pattern = re.compile(
        r'faq_http_requests_total\{method="GET",route="/api/v1/<org>/categories",'
        r'status="200"\} (\d+)'
    )
    before = int(pattern.findall((await (await client.get("/metrics")).get_data()).decode())[0])
    await org.get("/categories", scope="read")
    after = int(pattern.findall((await (await client.get("/metrics")).get_data()).decode())[0])
    assert fast(app).served == served + 2
    assert after == before + 1


async def test_what_it_does_not_serve_goes_to_quart(app: Quart, org: OrgClient) -> None:
    q = await create(org, title="Published", status="published")
    path = f"/questions/{q['id']}"
    await twice(app, org, path)
    served = fast(app).served
    # No key, a wrong key, a revoked key: Quart's 401.
    assert (await org.get(path, scope=None)).status_code == 401
    assert (await org.get(path, scope=None, headers={"Authorization": "Bearer x"})).status_code == (
        401
    )
    other = await make_key(org, scopes=["read"])
    # A key this process has not looked up yet: Quart looks it up; then it is served here.
    assert (await as_key(org, other["key"], "GET", path)).status_code == 200
    assert fast(app).served == served
    assert (await as_key(org, other["key"], "GET", path)).status_code == 200
    assert (await org.delete(f"/keys/{other['fingerprint']}")).status_code == 204
    assert (await as_key(org, other["key"], "GET", path)).status_code == 401
    # The key of another org: 404 as if the org did not exist.
    elsewhere = f"/api/v1/no-such-org-xyz/questions/{q['id']}"
    r = await as_key(org, org.keys["read"], "GET", elsewhere)
    assert r.status_code == 404
    # A publishable key: CORS headers and analytics are Quart's.
    public = await make_public_key(org)
    for _ in range(2):
        r = await as_key(org, public["key"], "GET", path, headers={"Origin": SITE})
        assert r.status_code == 200
        assert r.headers["Access-Control-Allow-Origin"] == SITE
    # Another method, and an operation segment matched by the item route.
    assert (await org.request("HEAD", path, scope="read")).status_code == 200
    r = await org.get("/categories/merge", scope="read")
    assert r.status_code == 405
    assert fast(app).served == served + 1  # only the other secret key's read


async def test_a_request_refused_after_counting_is_counted_once(
    engine: AsyncEngine,
) -> None:
    from api.app import create_app
    from billing.plans import Plan
    from tenancy.settings import get_settings
    from tests.fixtures.orgs import make_org

    settings = get_settings().model_copy(
        update={"faq_rate_limits": "FREE=4", "faq_rate_limit_window_seconds": 60}
    )
    strict = create_app(settings)
    async with strict.test_app():
        org = await make_org(engine, strict.test_client(), Plan.FREE)
        # Held keys and orgs outlive a second only once this app's directory listens, and the
        # org's key creations must have arrived: else a dropped entry sends a read to Quart.
        await settled(strict, engine)
        remaining = []
        for _ in range(4):
            r = await org.get("/categories", scope="read")
            assert r.status_code == 200
            remaining.append(r.headers["RateLimit-Remaining"])
        assert remaining == ["3", "2", "1", "0"]
        assert fast(strict).served == 3
        r = await org.get("/categories", scope="read")  # counted by the fast path, refused
        assert r.status_code == 429
        assert (await r.get_json())["error"]["code"] == "rate_limited"
        assert r.headers["RateLimit-Remaining"] == "0"
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        assert fast(strict).served == 3


async def test_a_single_read_missing_from_the_cache_is_read_here_as_quart_reads_it(
    app: Quart, org: OrgClient
) -> None:
    q = await create(org, title="A draft, seen by secret keys", status="draft")
    cache = app.extensions["tenancy"].cache
    for path in (f"/questions/{q['id']}", f"/questions/{q['slug']}"):
        quart = await through_quart(app, org, path)
        assert quart.status_code == 200
        cache.clear()
        served = fast(app).served
        r = await org.get(path, scope="read")
        assert fast(app).served == served + 1
        assert r.status_code == 200
        assert await r.get_data() == await quart.get_data()
        assert comparable(r) == comparable(quart)
        assert (
            int(r.headers["RateLimit-Remaining"]) == int(quart.headers["RateLimit-Remaining"]) - 1
        )
        # It filled the cache: the next read is a hit, the same body.
        hits = cache.hits
        again = await org.get(path, scope="read")
        assert cache.hits == hits + 1
        assert await again.get_data() == await quart.get_data()
    # What it cannot answer is Quart's: an unknown question, another parameter.
    served = fast(app).served
    r = await org.get("/questions/no-such-question", scope="read")
    assert r.status_code == 404
    assert (await r.get_json())["error"]["code"] == "question_not_found"
    r = await org.get(f"/questions/{q['id']}", scope="read", query={"other": "1"})
    assert r.status_code == 200
    assert fast(app).served == served


async def test_with_the_cache_off_it_reads_single_questions_and_nothing_else(
    engine: AsyncEngine,
) -> None:
    from api.app import create_app
    from billing.plans import Plan
    from tenancy.settings import get_settings
    from tests.fixtures.orgs import make_org

    uncached = create_app(get_settings().model_copy(update={"faq_response_cache_mb": 0}))
    async with uncached.test_app():
        org = await make_org(engine, uncached.test_client(), Plan.STARTER)
        q = await create(org, title="Read without a cache", status="published")
        path = f"/questions/{q['slug']}"
        await org.get(path, scope="read")  # the key and the org, looked up by Quart once
        quart = await through_quart(uncached, org, path)
        served = fast(uncached).served
        r = await org.get(path, scope="read")
        assert fast(uncached).served == served + 1
        assert await r.get_data() == await quart.get_data()
        assert comparable(r) == comparable(quart)
        assert (
            int(r.headers["RateLimit-Remaining"]) == int(quart.headers["RateLimit-Remaining"]) - 1
        )
        for other in ("/questions", "/categories", f"/categories/{q['categoryId']}"):
            assert (await org.get(other, scope="read")).status_code == 200
        assert fast(uncached).served == served + 1
